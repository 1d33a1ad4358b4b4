# SPDX-License-Identifier: GPL-3.0-or-later
"""kvscope's presses against kvpress 0.5.5 itself, on tiny random Llama and Qwen3 models saved with
save_pretrained: for each press both have, the same ratio and options, kvpress's press on the Transformers model
and `kvscope-cli run --checkpoint` must keep the same positions per layer and KV head after the prefill, and
pick the same next two tokens (the second one attends through the compressed cache).

Run by ctest (`peers_kvpress`) with the peers' Python: KVSCOPE_CLI names the CLI.
"""
import json
import os
import subprocess
import warnings

import pytest
import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM, DynamicCache

import kvpress

warnings.filterwarnings("ignore")
transformers.logging.set_verbosity_error()
transformers.utils.logging.disable_progress_bar()
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLI = os.environ.get("KVSCOPE_CLI", os.path.join(ROOT, "build", "dev", "engine", "cli", "kvscope-cli"))
PROMPT = "The key-value cache keeps what attention has seen so far."  # a checkpoint without tokenizer: bytes
SMALL = {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4,
         "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 260, "initializer_range": 0.2,
         "bos_token_id": None, "eos_token_id": None, "pad_token_id": None}
MODELS = {"llama": {"tie_word_embeddings": False}, "qwen3": {"tie_word_embeddings": True}}

# kvscope's name: (kvpress class, options both take). Options shrink windows below the 58-token prompt.
PRESSES = {
    "knorm": ("KnormPress", {}),
    "streaming_llm": ("StreamingLLMPress", {"n_sink": 4}),
    "snapkv": ("SnapKVPress", {"window_size": 8, "kernel_size": 5}),
    "tova": ("TOVAPress", {}),
    "pyramidkv": ("PyramidKVPress", {"window_size": 8, "kernel_size": 5}),
    "expected_attention": ("ExpectedAttentionPress", {"n_future_positions": 64, "n_sink": 4}),
    "keydiff": ("KeyDiffPress", {}),
    "lagkv": ("LagKVPress", {"n_sink": 4, "lag_size": 8}),
    "non_causal_attention": ("NonCausalAttnPress", {"chunk_size": 16}),
    "cur": ("CURPress", {"num_sinks": 4, "local_window_size": 16}),
    "compactor": ("CompactorPress", {"chunk_size": 16, "sketch_dimension": 48}),
    "cap": ("CapPress", {"n_future_positions": 64, "n_sink": 4}),
    "random": ("RandomPress", {"seed": 0}),
}
# Wrappers: kvscope's name: (kvpress class, its own options); the base press is Knorm in both.
WRAPPERS = {
    "chunkkv": ("ChunkKVPress", {"chunk_length": 8}),
    "chunk": ("ChunkPress", {"chunk_length": 16}),
    "block": ("BlockPress", {"block_size": 16}),
    "criticalkv": ("CriticalKVPress", {"epsilon": 1e-4, "first_stage_ratio": 0.5}),
}
RATIOS = [0.25, 0.5]


def pass_cache_position(module, args, kwargs):
    """kvpress 0.5.5 reads `cache_position` from the attention's keywords; Transformers stopped passing it in 5.4.
    This passes it as 5.2 did (the positions of the step's queries), changing nothing else."""
    cache = kwargs.get("past_key_values")
    hidden = kwargs["hidden_states"] if "hidden_states" in kwargs else args[0]
    past = cache.get_seq_length(module.layer_idx) if cache is not None else 0
    kwargs["cache_position"] = torch.arange(past, past + hidden.shape[1], device=hidden.device)
    return args, kwargs


@pytest.fixture(scope="module", params=list(MODELS))
def checkpoint(request, tmp_path_factory):
    config = AutoConfig.for_model(request.param, **{**SMALL, **MODELS[request.param]})
    torch.manual_seed(1)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32).eval()
    folder = tmp_path_factory.mktemp(request.param)
    model.save_pretrained(folder)
    for layer in model.model.layers:
        layer.self_attn.register_forward_pre_hook(pass_cache_position, with_kwargs=True)
    return request.param, model, folder


def kvpress_run(model, press):
    """Kept positions per layer and KV head after kvpress's prefill, and the next two greedy tokens."""
    ids = torch.tensor([[256] + list(PROMPT.encode())])  # kvscope's byte tokenizer: <bos> (256), then the bytes
    with torch.no_grad():
        full = DynamicCache()
        model(ids, past_key_values=full)
        cache = DynamicCache()
        # Presses that draw random numbers draw them from torch's global generator; kvscope seeds its own
        # with the press's `seed` option, 0 by default.
        torch.manual_seed(0)
        scores = []
        scorer = press.press if hasattr(press, "press") else press
        if hasattr(scorer, "score"):
            # kvpress's own scores, one [B, Hkv, T] per layer: ties are judged by them.
            original_score = scorer.score
            scorer.score = lambda *args, **kwargs: scores.append(original_score(*args, **kwargs)) or scores[-1]
        with press(model):
            out = model(ids, past_key_values=cache)
        if hasattr(scorer, "score"):
            del scorer.score
        first = int(out.logits[0, -1].argmax())
        # kvpress's kept tokens keep their positions; the next one continues from the prompt's length.
        nxt = model(torch.tensor([[first]]), past_key_values=cache, position_ids=torch.tensor([[ids.shape[1]]]))
        second = int(nxt.logits[0, -1].argmax())
    kept = []
    # Knorm's score is minus the key's norm; wrappers score chunks of the same Knorm scores.
    ranks = [s[0] for s in scores] if len(scores) == len(cache.layers) and not hasattr(press, "press") \
        else [-full.layers[layer].keys[0].norm(dim=-1) for layer in range(len(cache.layers))]
    for layer in range(len(cache.layers)):
        original, pressed = full.layers[layer].keys[0], cache.layers[layer].keys[0, :, :-1]  # minus the new token
        heads = []
        for head in range(original.shape[0]):
            distance = torch.cdist(pressed[head].double(), original[head].double())
            positions = distance.argmin(-1)
            assert bool((distance.min(-1).values < 1e-6).all()), "a kept key is no prompt key"
            heads.append(sorted(positions.tolist()))
        kept.append(heads)
    return kept, [first, second], ranks


def kvscope_run(folder, name, ratio, options, tmp_path):
    session = tmp_path / f"{name}-{ratio}.kvsess"
    command = [CLI, "run", "--checkpoint", str(folder), "--prompt", PROMPT, "--tokens", "2", "--press", name,
               "--ratio", str(ratio), "--out", str(session), "--no-progress"]
    for key, value in options.items():
        command += ["--press-option", f"{key}={value}"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    tokens = json.loads(done.stdout)["tokens"]
    state = json.loads(subprocess.run([CLI, "replay", str(session), "--step", "0"], capture_output=True,
                                      text=True, check=True).stdout)
    kept = [[sorted(head) for head in layer["compression"]["kept_positions"]] for layer in state["layers"]]
    return kept, tokens


def make_press(name, ratio):
    """kvpress's press and the --press-option values kvscope takes for it."""
    if name in WRAPPERS:
        cls, options = WRAPPERS[name]
        inner = kvpress.KnormPress(compression_ratio=ratio)
        return getattr(kvpress, cls)(press=inner, **options), {"base": "knorm", **options}
    cls, options = PRESSES[name]
    return getattr(kvpress, cls)(compression_ratio=ratio, **options), options


@pytest.mark.parametrize("ratio", RATIOS)
@pytest.mark.parametrize("name", list(PRESSES) + list(WRAPPERS))
def test_press_keeps_what_kvpress_keeps(checkpoint, name, ratio, tmp_path):
    family, model, folder = checkpoint
    press, options = make_press(name, ratio)
    expected_kept, expected_tokens, ranks = kvpress_run(model, press)
    kept, tokens = kvscope_run(folder, name, ratio, options, tmp_path)
    where = f"{family}, {name} at {ratio} against kvpress 0.5.5"
    tied = False
    for layer, (ours, theirs) in enumerate(zip(kept, expected_kept)):
        for head, (a, b) in enumerate(zip(ours, theirs)):
            if a == b:
                continue
            # Equal scores: layer 0's keys depend on the token alone, so a repeated token ties. kvscope keeps the
            # earliest of tied tokens, kvpress what torch.topk returns (docs/presses.md). The kept scores agree.
            score = ranks[layer][head].double()
            assert len(a) == len(b) and torch.allclose(score[a].sort().values, score[b].sort().values, atol=1e-6), \
                f"{where}: layer {layer}, KV head {head}: kvscope keeps {a}, kvpress {b} (not a tie)"
            tied = True
    if not tied:  # tokens after a different (tied) choice may differ: the cache differs
        assert tokens == expected_tokens, f"{where}: tokens {tokens}, kvpress {expected_tokens}"
