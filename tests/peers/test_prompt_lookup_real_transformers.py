# SPDX-License-Identifier: GPL-3.0-or-later
"""Prompt-lookup decoding (`kvscope-cli run --prompt-lookup-num-tokens N`) against Transformers' own
`generate(prompt_lookup_num_tokens=N)` on the same checkpoint: tiny random-initialised models saved with
`save_pretrained` (a Llama, and a Gemma 3 whose sliding window of 4 is shorter than every draft's reach, so that
each rejected draft rolls its sliding layers back through the recorded past). At every verification step both
must draft the same number of tokens, accept the same number, and leave the cache (every layer) the same length
after the rejected ones are cropped; the generated tokens must be the same, and those of plain greedy decoding.

Run by ctest (`peers_prompt_lookup`) with the peers' Python: KVSCOPE_CLI names the CLI.
"""
import json
import os
import subprocess
import warnings

import pytest
import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM

from prompt_lookup_steps import generate_with_steps

warnings.filterwarnings("ignore")
transformers.logging.set_verbosity_error()
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLI = os.environ.get("KVSCOPE_CLI", os.path.join(ROOT, "build", "dev", "engine", "cli", "kvscope-cli"))
# kvscope's byte tokenizer for a checkpoint without one: its bos (256), then the prompt's UTF-8 bytes (vocabulary 260).
PROMPT = "abcab abcab abcab xyz abcab ab"
BOS = 256
BASE = {"hidden_size": 32, "intermediate_size": 48, "num_attention_heads": 4, "num_key_value_heads": 2,
        "head_dim": 16, "vocab_size": 260, "max_position_embeddings": 256, "rms_norm_eps": 1e-6,
        "initializer_range": 0.2, "bos_token_id": None, "eos_token_id": None, "pad_token_id": None}
CASES = {
    "llama": {"model_type": "llama", "num_hidden_layers": 2, "tie_word_embeddings": False},
    "gemma3-sliding": {"model_type": "gemma3_text", "sliding_window": 4, "num_hidden_layers": 3,
                       "layer_types": ["sliding_attention", "full_attention", "sliding_attention"],
                       "query_pre_attn_scalar": 24, "hidden_activation": "gelu_pytorch_tanh"},
}
NEW_TOKENS = 24


def checkpoint(case, folder, seed):
    settings = dict(CASES[case])
    config = AutoConfig.for_model(settings.pop("model_type"), **{**BASE, **settings})
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config).eval()
    model.save_pretrained(folder)
    return model


def transformers_steps(model, ids, num_tokens):
    """generate() with prompt lookup, and per verification: drafted, accepted, every layer's length after the crop."""
    return generate_with_steps(model, ids, num_tokens, NEW_TOKENS)


def kvscope_run(folder, num_tokens):
    command = [CLI, "run", "--checkpoint", str(folder), "--prompt", PROMPT, "--tokens", str(NEW_TOKENS),
               "--ignore-eos", "--out", str(folder / "run.kvsess")]
    if num_tokens:
        command += ["--prompt-lookup-num-tokens", str(num_tokens)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("num_tokens", [2, 5])
def test_prompt_lookup_matches_transformers_generate(case, num_tokens, tmp_path):
    model = checkpoint(case, tmp_path, seed=3)
    ids = [BOS] + list(PROMPT.encode("utf-8"))
    expected_tokens, expected_steps = transformers_steps(model, ids, num_tokens)
    with torch.no_grad():
        greedy = model.generate(torch.tensor([ids]), max_new_tokens=NEW_TOKENS, do_sample=False)[0, len(ids):].tolist()
    assert expected_tokens == greedy, "Transformers' prompt lookup parted from its greedy decoding"
    assert any(step["accepted"] > 0 for step in expected_steps), "no draft accepted: the case tests no acceptance"
    assert any(step["accepted"] < step["drafted"] for step in expected_steps), "no draft rejected: no rollback tested"

    summary = kvscope_run(tmp_path, num_tokens)
    assert summary["tokens"] == expected_tokens
    got = summary["prompt_lookup"]["steps"]
    assert [(s["drafted"], s["accepted"]) for s in got] == [(s["drafted"], s["accepted"]) for s in expected_steps]
    assert [s["cache_length"] for s in got] == [s["lengths"][0] for s in expected_steps]
    # Every layer's length after every step, as the session recorded it (sliding layers count every token).
    info = json.loads(subprocess.run([CLI, "info", str(tmp_path / "run.kvsess")], capture_output=True, text=True,
                                     check=True).stdout)
    assert info["steps"] == len(expected_steps)
    for step, expected in enumerate(expected_steps):
        state = json.loads(subprocess.run([CLI, "replay", str(tmp_path / "run.kvsess"), "--step", str(step)],
                                          capture_output=True, text=True, check=True).stdout)
        assert [layer["seq_length"] for layer in state["layers"]] == expected["lengths"], (case, step)
        # The step's speculation event (format 1.9): Transformers' drafted and accepted counts, every layer's length
        # before (the previous step's after the crop) and after, and the positions written then rolled back.
        speculation = state["speculation"]
        before = expected_steps[step - 1]["lengths"] if step > 0 else [0] * len(expected["lengths"])
        assert (speculation["drafted"], speculation["accepted"]) == (expected["drafted"], expected["accepted"]), step
        assert speculation["lengths_before"] == before, (case, step)
        assert speculation["lengths_after"] == expected["lengths"], (case, step)
        first = speculation["first_position"]
        assert first == (len(ids) if step == 0 else before[0] + 1), (case, step)
        assert speculation["rolled_back"] == [first + expected["accepted"], first + expected["drafted"]], (case, step)
        # What a sliding layer holds after the crop: the window's W - 1 tokens once it has seen W.
        for layer, config_type in enumerate(getattr(model.config, "layer_types", None) or []):
            if config_type == "sliding_attention":
                held = state["layers"][layer]["stored_tokens"]
                assert held == min(expected["lengths"][layer], model.config.sliding_window - 1), (case, step, layer)
