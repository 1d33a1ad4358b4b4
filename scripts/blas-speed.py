#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Measures what the BLAS behind LibTorch costs kvscope, side by side: the BLAS in use (libblas.so.3 as
update-alternatives chose it) against Debian's reference BLAS, forced into the same binary with
LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/blas (nothing on the system is changed).

For each BLAS: `bench gemm` (512x1024x3072 float GEMM), the prefill of --prompt-tokens tokens (512) through
a checkpoint of Qwen3-0.6B's shapes (28 layers, hidden 1024, MLP 3072, 16 query and 8 KV heads of 128,
vocabulary 151936; random bf16 weights this script writes, std 0.02), `fidelity` of snapkv at 0.5
(window 8) on the llama preset's default prompt (128 tokens), and 20 `train` steps of the llama preset.
Each is timed in wall clock and in CPU time (user + system of the child), the fairer figure on a shared
machine. Prints a Markdown table (README, "Speed").
    scripts/blas-speed.py [--cli build/dev/engine/cli/kvscope-cli] [--work DIR] [--prompt-tokens N]
                          [--skip-reference]
"""
import argparse
import json
import os
import resource
import struct
import subprocess
import sys
import tempfile
import time

REFERENCE_BLAS_DIR = "/usr/lib/x86_64-linux-gnu/blas"
QWEN3_0_6B = {
    "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 1024,
    "intermediate_size": 3072, "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8,
    "head_dim": 128, "vocab_size": 151936, "rms_norm_eps": 1e-06, "rope_theta": 1000000,
    "max_position_embeddings": 40960, "tie_word_embeddings": True, "attention_bias": False,
    "hidden_act": "silu", "use_sliding_window": False, "sliding_window": None, "torch_dtype": "bfloat16",
}


def write_checkpoint(folder):
    """config.json and model.safetensors (bf16) of Qwen3-0.6B's shapes, random weights of seed 0."""
    import torch

    os.makedirs(folder, exist_ok=True)
    config = QWEN3_0_6B
    with open(os.path.join(folder, "config.json"), "w") as out:
        json.dump(config, out, indent=2)
    hidden, mlp, head = config["hidden_size"], config["intermediate_size"], config["head_dim"]
    q, kv = config["num_attention_heads"] * head, config["num_key_value_heads"] * head
    shapes = [("model.embed_tokens.weight", (config["vocab_size"], hidden)), ("model.norm.weight", (hidden,))]
    for layer in range(config["num_hidden_layers"]):
        p = "model.layers.%d." % layer
        shapes += [(p + "input_layernorm.weight", (hidden,)), (p + "post_attention_layernorm.weight", (hidden,)),
                   (p + "self_attn.q_proj.weight", (q, hidden)), (p + "self_attn.k_proj.weight", (kv, hidden)),
                   (p + "self_attn.v_proj.weight", (kv, hidden)), (p + "self_attn.o_proj.weight", (hidden, q)),
                   (p + "self_attn.q_norm.weight", (head,)), (p + "self_attn.k_norm.weight", (head,)),
                   (p + "mlp.gate_proj.weight", (mlp, hidden)), (p + "mlp.up_proj.weight", (mlp, hidden)),
                   (p + "mlp.down_proj.weight", (hidden, mlp))]
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, shape in shapes:
        count = 1
        for size in shape:
            count *= size
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + 2 * count]}
        offset += 2 * count
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    generator = torch.Generator().manual_seed(0)
    with open(os.path.join(folder, "model.safetensors"), "wb") as out:
        out.write(struct.pack("<Q", len(text)) + text)
        for name, shape in shapes:
            if name.endswith("norm.weight"):
                tensor = torch.ones(shape, dtype=torch.bfloat16)
            else:
                tensor = (torch.randn(shape, generator=generator) * 0.02).to(torch.bfloat16)
            out.write(tensor.view(torch.int16).numpy().tobytes())


def run(cli, args, env):
    """(parsed JSON, wall seconds, CPU seconds of the child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([cli, *args], capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit("kvscope-cli %s failed (%d): %s" % (" ".join(args), done.returncode, done.stderr[-2000:]))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return json.loads(done.stdout), seconds, cpu


def measure(cli, checkpoint, prompt_file, corpus, work, env):
    gemm, _, gemm_cpu = run(cli, ["bench", "gemm"], env)
    prefill, prefill_wall, prefill_cpu = run(cli, ["run", "--checkpoint", checkpoint, "--prompt-file", prompt_file,
                                                   "--tokens", "1", "--no-progress"], env)
    fidelity, fidelity_wall, fidelity_cpu = run(cli, ["fidelity", "--preset", "llama", "--press", "snapkv",
                                                      "--ratio", "0.5", "--press-option", "window_size=8"], env)
    train, train_wall, train_cpu = run(cli, ["train", "--preset", "llama", "--corpus", corpus, "--steps", "20",
                                             "--eval-every", "20", "--out", os.path.join(work, "train.safetensors"),
                                             "--no-progress"], env)
    return {
        "blas": "%s (%s)" % (gemm["blas"]["implementation"], gemm["blas"]["path"]),
        "threads": gemm["threads"],
        "gemm": "%.1f (best %.1f)" % (gemm["gflops"], gemm["best_gflops"]),
        "prefill_tokens": prefill["prompt_tokens"],
        "prefill": "%.0f s (%.0f s CPU, load included)" % (prefill["timings"]["prefill_ms"] / 1000.0, prefill_cpu),
        "fidelity": "%.0f s (%.0f s CPU)" % (fidelity_wall, fidelity_cpu),
        "train": "%.3f (%.1f s CPU)" % (train["steps_per_second"], train_cpu),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cli", default="build/dev/engine/cli/kvscope-cli")
    parser.add_argument("--work", help="folder for the checkpoint (kept); a temporary one by default")
    parser.add_argument("--prompt-tokens", type=int, default=512, help="prefill length (the byte tokenizer's bos "
                        "included)")
    parser.add_argument("--skip-reference", action="store_true", help="measure the BLAS in use only")
    args = parser.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="kvscope-blas-")
    checkpoint = os.path.join(work, "qwen3-0.6b-shapes")
    if not os.path.exists(os.path.join(checkpoint, "model.safetensors")):
        print("writing %s ..." % checkpoint, file=sys.stderr)
        write_checkpoint(checkpoint)
    prompt_file = os.path.join(work, "prompt.txt")
    with open(prompt_file, "w") as out:  # one byte per token after the byte tokenizer's bos
        text = "The cache keeps the keys and values of every token it has seen. "
        out.write((text * (args.prompt_tokens // len(text) + 1))[:args.prompt_tokens - 1])
    corpus = os.path.join(work, "corpus.txt")
    with open(corpus, "w") as out:
        for i in range(4000):
            out.write("Line %d: a key, a value and a query walk into a cache; only the recent ones stay.\n" % i)
    rows = []
    blases = [("in use", dict(os.environ))]
    if not args.skip_reference:
        reference = dict(os.environ)
        reference["LD_LIBRARY_PATH"] = REFERENCE_BLAS_DIR + (":" + reference["LD_LIBRARY_PATH"]
                                                            if reference.get("LD_LIBRARY_PATH") else "")
        blases.insert(0, ("reference", reference))
    for label, env in blases:
        print("measuring the %s BLAS ..." % label, file=sys.stderr)
        rows.append(measure(args.cli, checkpoint, prompt_file, corpus, work, env))
    print("| BLAS | threads | GEMM 512x1024x3072 (GFLOP/s) | prefill of %d tokens, Qwen3-0.6B shapes "
          "| fidelity, llama, snapkv 0.5 | train, llama (steps/s) |" % rows[0]["prefill_tokens"])
    print("| --- | --- | --- | --- | --- | --- |")
    for row in rows:
        print("| %s | %d | %s | %s | %s | %s |" % (row["blas"], row["threads"], row["gemm"], row["prefill"],
                                                  row["fidelity"], row["train"]))


if __name__ == "__main__":
    main()
