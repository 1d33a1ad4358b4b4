# SPDX-License-Identifier: GPL-3.0-or-later
"""`kvscope.record_vllm(llm, path)`: record a vLLM run's paged KV cache as a kvscope serving session.

vLLM's KV events (BlockStored, BlockRemoved) carry hashes and tokens only. In-process, the recorder sees what
they leave out: which physical block each request's table holds in each KV cache group, the free queue's
order, prefix hits, preemptions and the scheduler's decisions per step. It writes them as the paged-serving
events of sessions/FORMAT.md (kinds 16-27), so that `kvscope-cli replay --step K` and the kvscope GUI's pool,
request and prefix-tree views show the run as they show kvscope's own `kvscope-cli serve`.

How: while the `with` block runs, methods of the live objects of one engine (its Scheduler, KVCacheManager,
each single-type manager and the BlockPool) are shadowed on those instances; each shadow calls vLLM's own
method with the same arguments, returns what it returns, and reports what changed. vLLM's classes and other
engines are untouched, and on exit every instance gets back exactly what it had. One scheduler step of vLLM
(`schedule`, the model, `update_from_output`) is one step of the session.

Needs vLLM's engine core in this process (`VLLM_ENABLE_V1_MULTIPROCESSING=0` before the LLM is made) and
synchronous scheduling (`async_scheduling=False`); anything else is refused with what to change.
"""

import importlib
import inspect
import os
import sys
import time

from . import events as ev
from .patching import Patches
from .session_file import PAGED_MINOR, SessionFile

_MASK64 = (1 << 64) - 1
_NO_TOKENIZER = object()


def _hash64(block_hash) -> int:
    """The 64-bit integer vLLM's KV events carry for a block hash (`maybe_convert_block_hash`): the digest's last
    8 bytes, big-endian; kvscope's sha256_cbor hashes are the same integers."""
    if isinstance(block_hash, int):
        return block_hash & _MASK64
    return int.from_bytes(bytes(block_hash), "big") & _MASK64


def _engine_parts(engine):
    """(engine core or None, scheduler) of an LLM, an LLMEngine, an EngineCore or a Scheduler."""
    where = type(engine).__name__
    if hasattr(engine, "llm_engine"):  # vllm.LLM
        engine = engine.llm_engine
    if hasattr(engine, "engine_core") and not hasattr(engine, "scheduler"):  # LLMEngine -> its client
        client = engine.engine_core
        if hasattr(client, "engine_core"):  # InprocClient
            engine = client.engine_core
        elif hasattr(client, "scheduler"):
            engine = client
        else:
            raise RuntimeError(
                "kvscope.record_vllm: this %s runs vLLM's engine core in another process (%s), where its scheduler "
                "cannot be watched; set VLLM_ENABLE_V1_MULTIPROCESSING=0 in the environment before the LLM is "
                "created" % (where, type(client).__name__))
    if hasattr(engine, "scheduler") and hasattr(engine.scheduler, "kv_cache_manager"):
        return engine, engine.scheduler
    if hasattr(engine, "kv_cache_manager") and hasattr(engine, "schedule"):
        return None, engine
    raise TypeError("kvscope.record_vllm: expected a vllm.LLM, LLMEngine, EngineCore or Scheduler, got %s" % where)


class VllmRecorder:
    """Writes one serving session of a vLLM engine; use it through `kvscope.record_vllm`."""

    def __init__(self, engine, path, tokenizer="auto", description=""):
        self.path = os.fspath(path)
        self.engine = engine
        self.description = description
        self._tokenizer_given = tokenizer
        self.tokenizer = None
        self._patches = Patches()
        self._file = None
        self._step = 0
        self._step_open = False
        self._step_start = 0
        self._summary = []
        self._releases = {}       # block id -> [(request, group, table index)] popped for freeing, not yet freed
        self._windowed = None     # (request, group, {block id: table index}) while a sliding group drops blocks
        self._names = {}          # vLLM's internal request id -> the id the caller gave (what outputs carry)
        self._given = set()
        self.steps_written = 0
        self.prologue_events = 0  # events that set up a pool that had served before the recording began
        self.lost = 0
        self._warned = False
        self._write_error = None

    # --- lifecycle -------------------------------------------------------------------------

    def __enter__(self):
        core, scheduler = _engine_parts(self.engine)
        if core is not None and (getattr(core, "batch_queue", None) is not None or getattr(core, "async_scheduling",
                                                                                           False)):
            raise RuntimeError(
                "kvscope.record_vllm: this engine schedules asynchronously (a step is scheduled before the previous "
                "one's output is in), so its steps cannot be told apart; create the LLM with async_scheduling=False")
        if scheduler.requests:
            raise RuntimeError(
                "kvscope.record_vllm: vLLM's scheduler already holds %d request(s) (%s); start recording before "
                "adding requests, so that the session holds their whole life"
                % (len(scheduler.requests), ", ".join(list(scheduler.requests)[:4])))
        directory = os.path.dirname(os.path.abspath(self.path))
        if not os.path.isdir(directory) or not os.access(directory, os.W_OK):
            raise OSError("kvscope.record_vllm: cannot write %s: the folder %s does not exist or is not writable"
                          % (self.path, directory))
        self.core = core
        self.scheduler = scheduler
        self.manager = scheduler.kv_cache_manager
        self.pool = self.manager.block_pool
        self.groups = list(self.manager.coordinator.single_type_managers)
        self._utils = importlib.import_module("vllm.v1.core.kv_cache_utils")
        self._status = importlib.import_module("vllm.v1.request").RequestStatus
        self.tokenizer = self._find_tokenizer()
        self._file = SessionFile(self.path, self._metadata(), minor=PAGED_MINOR, snapshots=False)
        self._emit(ev.PAGED_POOL, self._pool_fields())
        self._write_prologue()
        try:
            self._patch()
        except BaseException:
            self._patches.restore()
            self._file.close_unfinished()
            raise
        return self

    def __exit__(self, exc_type, exc, traceback):
        try:
            if exc_type is None and self._step_open:
                self._close_step()
        except Exception as error:  # the recording's own failure must not replace the block's outcome
            self.lose("step_end", error)
        finally:
            self._patches.restore()
            try:
                if exc_type is None and self._write_error is None:
                    self._file.finish()
                else:
                    self._file.close_unfinished()  # a crash's file: its finished steps stay readable
            except Exception as error:
                self._write_failed(error)
        return False

    # --- what the session says about the engine ----------------------------------------------

    def _find_tokenizer(self):
        given = self._tokenizer_given
        if given is None:
            return None
        if given != "auto":
            return given
        get = getattr(self.engine, "get_tokenizer", None)
        if get is None:
            return None
        try:
            return get()  # None, or an error, when the LLM was made with skip_tokenizer_init=True
        except Exception:
            return None

    def _group_windows(self):
        windows = []
        for manager in self.groups:
            window = getattr(manager.kv_cache_spec, "sliding_window", None)
            windows.append(int(window) if window else 0)
        return windows

    def _pool_fields(self):
        config = self.scheduler.scheduler_config
        return (int(self.groups[0].block_size), int(self.pool.num_gpu_blocks), int(self.pool.null_block.block_id),
                bool(self.manager.enable_caching), ev.FREE_POLICY_CURRENT, self._group_windows(),
                int(config.max_num_batched_tokens), int(self.scheduler.max_num_running_reqs))

    def _metadata(self):
        import vllm
        from . import __version__
        vllm_config = self.scheduler.vllm_config
        model_config = vllm_config.model_config
        try:
            hf_config = model_config.hf_config.to_dict()
        except Exception:
            hf_config = {}
        groups = []
        for index, group in enumerate(self.manager.coordinator.kv_cache_config.kv_cache_groups):
            window = getattr(group.kv_cache_spec, "sliding_window", None)
            groups.append({"group": index, "kind": "sliding" if window else "full", "window": int(window or 0),
                           "layers": len(group.layer_names), "spec": type(group.kv_cache_spec).__name__})
        return {
            "kvscope_version": "%s (python recorder; vllm %s)" % (__version__, vllm.__version__),
            "model": str(model_config.model),
            "model_config": _json_safe(hf_config),
            "cache": "paged",
            "cache_settings": {
                "kind": "paged", "engine": "vllm", "vllm_version": vllm.__version__,
                "block_size": int(self.groups[0].block_size), "num_blocks": int(self.pool.num_gpu_blocks),
                "max_num_batched_tokens": int(self.scheduler.scheduler_config.max_num_batched_tokens),
                "max_num_seqs": int(self.scheduler.max_num_running_reqs),
                "prefix_caching": bool(self.manager.enable_caching), "free_policy": "current",
                "prefix_caching_hash_algo": str(getattr(vllm_config.cache_config, "prefix_caching_hash_algo", "")),
                "groups": groups},
            "device": str(getattr(vllm_config.device_config, "device_type", "") or "cpu"),
            "seed": int(model_config.seed or 0) & _MASK64,
            "prompt": self.description,
            "tokenizer": str(getattr(self.tokenizer, "name_or_path", "")) if self.tokenizer is not None else "",
            "created_unix_ns": time.time_ns(),
            "recorder": "python-vllm",
        }

    def _write_prologue(self):
        """A pool that served before the recording began is not the fresh pool the paged_pool event describes
        (free queue 1..N-1, nothing cached): its free queue's order and its cached blocks are set up at step 0 by
        events of no request ("") that take every block out of the queue, put them back in the pool's order and
        cache what it holds."""
        queue = [block.block_id for block in self.pool.free_block_queue.get_all_free_blocks()]
        null = self.pool.null_block.block_id
        fresh = [block for block in range(self.pool.num_gpu_blocks) if block != null]
        cached = [block for block in self.pool.blocks if block.block_hash is not None]
        if queue == fresh and not cached:
            return
        for block in fresh:
            self._emit(ev.BLOCK_ALLOCATED, ("", 0, block, -1))
        for position, block in enumerate(queue):
            self._emit(ev.BLOCK_FREED, ("", 0, block, -1, 0, position, False))
        size = int(self.groups[0].block_size)
        for block in cached:
            key = block.block_hash
            tokens = getattr(block, "block_hash_num_tokens", None) or size
            self._emit(ev.BLOCK_CACHED, ("", self._utils.get_group_id(key), block.block_id,
                                         _hash64(self._utils.get_block_hash(key)), 0, tokens - size, tokens))
        self.prologue_events = len(fresh) + len(queue) + len(cached)

    # --- events ----------------------------------------------------------------------------

    def _emit(self, kind, fields):
        self._open_step()
        self._write((kind, self._step, -1, fields))

    def _write(self, event):
        if self._write_error is not None:
            return
        try:
            self._file.emit(event)
        except Exception as error:
            self._write_failed(error)

    def _open_step(self):
        """A step opens with its first event (an arrival, or vLLM's schedule) and ends with update_from_output."""
        if not self._step_open:
            self._step_open = True
            self._step_start = time.perf_counter_ns()
            self._write((ev.STEP_BEGIN, self._step, -1, (-1, "vLLM step %d" % self._step)))

    def _close_step(self):
        """Ends the step: vLLM's update_from_output has returned (or the recording stops)."""
        self._open_step()  # a step with no event of its own is still a step of vLLM's
        summary = " ".join(self._summary)
        self._summary = []
        self._write((ev.STEP_END, self._step, -1, (-1, summary, time.perf_counter_ns() - self._step_start)))
        self._step_open = False
        self._step += 1
        self.steps_written += 1

    def _text(self, token_ids):
        """(text, piece ends in bytes) of the tokens, each decoded alone; empty without a tokenizer."""
        if self.tokenizer is None:
            return "", []
        text, ends = "", []
        size = 0
        for token in token_ids:
            piece = self.tokenizer.decode([int(token)])
            text += piece
            size += len(piece.encode("utf-8", errors="replace"))
            ends.append(size)
        return text, ends

    def _tokens(self, request, first, token_ids):
        token_ids = [int(t) for t in token_ids]
        text, ends = self._text(token_ids)
        self._emit(ev.REQUEST_TOKENS, (request, int(first), token_ids, text, ends))
        return text

    def lose(self, operation, error) -> None:
        """An operation the recorder could not record: a `lost` annotation, one line on stderr; vLLM goes on."""
        self.lost += 1
        reason = "%s: %s" % (type(error).__name__, error)
        self._emit(ev.LOST, (str(operation), reason))
        self._warn("could not record %s (%s); the session marks it `lost` and vLLM goes on" % (operation, reason))

    def _write_failed(self, error) -> None:
        if self._write_error is None:
            self._write_error = error
            self.lost += 1
            self._warn("writing %s failed (%s: %s); nothing more is recorded and vLLM goes on"
                       % (self.path, type(error).__name__, error))

    def _warn(self, message) -> None:
        if self._warned:
            return
        self._warned = True
        try:
            sys.stderr.write("kvscope: %s (further problems of this recording are not reported here)\n" % message)
        except Exception:
            pass

    # --- shadows ---------------------------------------------------------------------------

    def _shadow(self, obj, name, make):
        """Shadows `obj.name` by make(original); the recording part of a shadow runs under `_guarded`."""
        original = getattr(obj, name)
        self._patches.set_instance_attribute(obj, name, make(original))

    def _guarded(self, operation, record, *args):
        try:
            record(*args)
        except Exception as error:
            self.lose(operation, error)

    def _name(self, request_id):
        return self._names.get(request_id, request_id)

    def _patch(self):
        s = self.scheduler
        if self.core is not None and hasattr(self.core, "preprocess_add_request"):
            self._shadow(self.core, "preprocess_add_request", self._preprocess_add_request)
        self._shadow(s, "add_request", self._add_request)
        self._shadow(s, "schedule", self._schedule)
        self._shadow(s, "_preempt_request", self._preempt_request)
        self._shadow(s, "_free_request", self._free_request)
        self._shadow(s, "_update_request_with_output", self._update_request_with_output)
        self._shadow(s, "update_from_output", self._update_from_output)
        self._shadow(self.manager, "allocate_slots", self._allocate_slots)
        self._shadow(self.manager, "reset_prefix_cache", self._reset_prefix_cache)
        for group, manager in enumerate(self.groups):
            self._shadow(manager, "add_local_computed_blocks", lambda f, g=group, m=manager: self._touch(f, g, m))
            for name in ("allocate_new_blocks", "allocate_external_computed_blocks"):
                self._shadow(manager, name, lambda f, g=group, m=manager: self._allocate(f, g, m))
            self._shadow(manager, "cache_blocks", lambda f, g=group, m=manager: self._cache(f, g, m))
            self._shadow(manager, "pop_blocks_for_free", lambda f, g=group, m=manager: self._pop(f, g, m))
            self._shadow(manager, "_remove_blocks_in_range", lambda f, g=group, m=manager: self._window(f, g, m))
        self._shadow(self.pool, "free_blocks", self._free_blocks)
        self._shadow(self.pool, "_maybe_evict_cached_block", self._evict)

    # Scheduler: requests and steps.

    def _add_request(self, original):
        def add_request(request, *args, **kwargs):
            new = request.request_id not in self.scheduler.requests
            result = original(request, *args, **kwargs)
            if new:
                self._guarded("add_request", self._arrived, request)
            return result
        return add_request

    def _preprocess_add_request(self, original):
        def preprocess_add_request(request, *args, **kwargs):
            result = original(request, *args, **kwargs)
            # vLLM makes request ids unique by a random suffix ("r0" -> "r0-1a2b3c4d"); the session keeps the
            # caller's id, which its outputs carry, unless this recording has given it to another request already.
            given = getattr(request, "external_req_id", None)
            if isinstance(given, str) and given not in self._given:
                self._given.add(given)
                self._names[result[0].request_id] = given
            return result
        return preprocess_add_request

    def _arrived(self, request):
        rid = self._name(request.request_id)
        self._emit(ev.REQUEST_ARRIVED, (rid, int(request.num_prompt_tokens), int(request.max_tokens)))
        if request.prompt_token_ids is not None:
            self._tokens(rid, 0, request.prompt_token_ids)

    def _schedule(self, original):
        def schedule(*args, **kwargs):
            self._open_step()
            output = original(*args, **kwargs)
            self._guarded("schedule", self._scheduled, output)
            return output
        return schedule

    def _scheduled(self, output):
        # vLLM has already counted the scheduled tokens as computed (_update_after_schedule).
        for rid, count in output.num_scheduled_tokens.items():
            request = self.scheduler.requests[rid]
            first = request.num_computed_tokens - count
            self._emit(ev.REQUEST_SCHEDULED, (self._name(rid), int(first), int(count), first + count >= request.num_tokens))

    def _preempt_request(self, original):
        def preempt_request(request, *args, **kwargs):
            self._guarded("preempt", lambda: self._emit(
                ev.REQUEST_PREEMPTED, (self._name(request.request_id), int(request.num_computed_tokens))))
            return original(request, *args, **kwargs)
        return preempt_request

    def _free_request(self, original):
        def free_request(request, *args, **kwargs):
            self._guarded("finish", self._finished, request)
            return original(request, *args, **kwargs)
        return free_request

    def _finished(self, request):
        status = self._status
        if request.status == status.FINISHED_LENGTH_CAPPED:
            reason = ev.FINISH_MAX_TOKENS if request.num_output_tokens >= request.max_tokens else ev.FINISH_MAX_MODEL_LEN
        else:
            # A stop token or string; the format has no reason for an abort, which shows as this too.
            reason = ev.FINISH_EOS
        self._emit(ev.REQUEST_FINISHED, (self._name(request.request_id), reason, int(request.num_output_tokens)))

    def _update_request_with_output(self, original):
        def update_request_with_output(request, *args, **kwargs):
            before = request.num_tokens
            result = original(request, *args, **kwargs)
            self._guarded("sampled tokens", self._sampled, request, before)
            return result
        return update_request_with_output

    def _sampled(self, request, before):
        new = list(request.all_token_ids[before:])
        if new:
            rid = self._name(request.request_id)
            text = self._tokens(rid, before, new)
            self._summary.append("%s:%s" % (rid, text if text else " ".join(map(str, new))))

    def _update_from_output(self, original):
        def update_from_output(*args, **kwargs):
            try:
                return original(*args, **kwargs)
            finally:
                self._close_step()
        return update_from_output

    # KV cache manager: admissions and prefix-cache resets.

    def _allocate_slots(self, original):
        signature = inspect.signature(original)

        def allocate_slots(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            request = bound.arguments["request"]
            admitting = request.status in (self._status.WAITING, self._status.PREEMPTED)
            resumed = request.status == self._status.PREEMPTED
            blocks = original(*args, **kwargs)
            if blocks is not None and admitting:
                hit = int(bound.arguments.get("num_new_computed_tokens", 0))
                self._guarded("admit", lambda: self._emit(
                    ev.REQUEST_ADMITTED, (self._name(request.request_id), int(request.num_tokens), hit, resumed)))
            return blocks
        return allocate_slots

    def _reset_prefix_cache(self, original):
        def reset_prefix_cache(*args, **kwargs):
            cached = [(block.block_id, block.block_hash) for block in self.pool.blocks if block.block_hash is not None]
            done = original(*args, **kwargs)
            if done:
                # The format has no "all blocks cleared": each cached block's hash is forgotten, as an eviction.
                for block, key in cached:
                    self._guarded("reset_prefix_cache", lambda b=block, k=key: self._emit(
                        ev.BLOCK_EVICTED, (self._utils.get_group_id(k), b, _hash64(self._utils.get_block_hash(k)))))
            return done
        return reset_prefix_cache

    # Single-type managers: one KV cache group's block tables.

    def _touch(self, original, group, manager):
        def add_local_computed_blocks(request_id, *args, **kwargs):
            result = original(request_id, *args, **kwargs)
            self._guarded("touch", self._touched, request_id, group, manager)
            return result
        return add_local_computed_blocks

    def _touched(self, request_id, group, manager):
        if not manager.enable_caching:
            return
        for index, block in enumerate(manager.req_to_blocks.get(request_id, ())):
            if not block.is_null:
                self._emit(ev.BLOCK_TOUCHED, (self._name(request_id), group, block.block_id, index, int(block.ref_cnt)))

    def _allocate(self, original, group, manager):
        def allocate(request_id, *args, **kwargs):
            before = [block.block_id for block in manager.req_to_blocks.get(request_id, ())]
            result = original(request_id, *args, **kwargs)
            self._guarded("allocate", self._allocated, request_id, group, manager, before)
            return result
        return allocate

    def _allocated(self, request_id, group, manager, before):
        for index, block in enumerate(manager.req_to_blocks.get(request_id, ())):
            if block.is_null or (index < len(before) and before[index] == block.block_id):
                continue
            self._emit(ev.BLOCK_ALLOCATED, (self._name(request_id), group, block.block_id, index))

    def _cache(self, original, group, manager):
        def cache_blocks(request, *args, **kwargs):
            before = manager.num_cached_block.get(request.request_id, 0)
            result = original(request, *args, **kwargs)
            self._guarded("cache", self._cached, request, group, manager, before)
            return result
        return cache_blocks

    def _cached(self, request, group, manager, before):
        rid = request.request_id
        after = manager.num_cached_block.get(rid, 0)
        table = manager.req_to_blocks.get(rid, ())
        size = int(manager.block_size)
        # Request hashes are per hash block; a group's blocks may span several of them.
        per_block = max(1, size // int(self.pool.hash_block_size))
        hashes = request.block_hashes
        for index in range(before, min(after, len(table))):
            block = table[index]
            if block.is_null or block.block_hash is None:
                continue  # a block a sliding group does not cache
            if index > 0 and index * per_block - 1 < len(hashes):
                parent = _hash64(hashes[index * per_block - 1])
            else:
                parent = _hash64(self._utils.NONE_HASH)
            self._emit(ev.BLOCK_CACHED, (self._name(rid), group, block.block_id,
                                         _hash64(self._utils.get_block_hash(block.block_hash)), parent,
                                         index * size, (index + 1) * size))

    def _pop(self, original, group, manager):
        def pop_blocks_for_free(request_id, *args, **kwargs):
            blocks = original(request_id, *args, **kwargs)
            # Remembered until the pool frees them (at once, or deferred by vLLM), to name their request and slot.
            for index, block in enumerate(blocks):
                if not block.is_null:
                    self._releases.setdefault(block.block_id, []).append((self._name(request_id), group, index))
            return blocks
        return pop_blocks_for_free

    def _window(self, original, group, manager):
        def remove_blocks_in_range(request_id, *args, **kwargs):
            slots = {block.block_id: index for index, block in enumerate(manager.req_to_blocks.get(request_id, ()))
                     if not block.is_null}
            self._windowed = (self._name(request_id), group, slots)
            try:
                return original(request_id, *args, **kwargs)
            finally:
                self._windowed = None
        return remove_blocks_in_range

    # Block pool: frees (with where each block joined the free queue) and evictions.

    def _free_blocks(self, original):
        def free_blocks(ordered_blocks, *args, **kwargs):
            blocks = list(ordered_blocks)
            original(blocks, *args, **kwargs)
            self._guarded("free", self._freed, blocks)
        return free_blocks

    def _freed(self, blocks):
        blocks = [block for block in blocks if not block.is_null]
        queued = {block.block_id for block in blocks if block.ref_cnt == 0}
        final = self._queue_positions(queued)
        waiting = set(queued)  # freed blocks not yet named by an event: the reader inserts one at a time
        for block in blocks:
            bid = block.block_id
            request, group, index, windowed = "", 0, -1, False
            released = self._releases.get(bid)
            if released:
                request, group, index = released.pop(0)
                if not released:
                    del self._releases[bid]
            elif self._windowed is not None and bid in self._windowed[2]:
                request, group, slots = self._windowed
                index, windowed = slots[bid], True
            position = -1
            if bid in waiting:
                waiting.discard(bid)
                position = final[bid] - sum(1 for other in waiting if final[other] < final[bid])
            self._emit(ev.BLOCK_FREED, (request, group, bid, index, int(block.ref_cnt), position, windowed))

    def _queue_positions(self, queued):
        """Where each just-freed block sits in the free queue now. vLLM puts them at the head (no hash) or the
        tail (cached), so they are found by walking in from both ends; anything else walks the whole queue."""
        if not queued:
            return {}
        queue = self.pool.free_block_queue
        positions = {}
        node, index = queue.fake_free_list_head.next_free_block, 0
        while node is not None and node.block_id in queued:
            positions[node.block_id] = index
            node, index = node.next_free_block, index + 1
        node, index = queue.fake_free_list_tail.prev_free_block, queue.num_free_blocks - 1
        while node is not None and node.block_id in queued and node.block_id not in positions:
            positions[node.block_id] = index
            node, index = node.prev_free_block, index - 1
        if len(positions) < len(queued):
            positions = {block.block_id: i for i, block in enumerate(queue.get_all_free_blocks())
                         if block.block_id in queued}
        return positions

    def _evict(self, original):
        def maybe_evict_cached_block(block, *args, **kwargs):
            key = block.block_hash
            evicted = original(block, *args, **kwargs)
            if evicted and key is not None:
                self._guarded("evict", lambda: self._emit(ev.BLOCK_EVICTED, (
                    self._utils.get_group_id(key), block.block_id, _hash64(self._utils.get_block_hash(key)))))
            return evicted
        return maybe_evict_cached_block


def _json_safe(value):
    import json
    return json.loads(json.dumps(value, default=str))


def record_vllm(engine, path, tokenizer="auto", description="") -> VllmRecorder:
    """Records the paged KV cache of a vLLM engine into the serving session `path` while the `with` block runs.

    `engine`: a `vllm.LLM` (or its LLMEngine, EngineCore or Scheduler) whose engine core runs in this process
    (`VLLM_ENABLE_V1_MULTIPROCESSING=0`), with `async_scheduling=False`. Every scheduler step is a step of the
    session. `tokenizer`: decodes the requests' tokens into the text the views show; "auto" takes the LLM's own
    (none when it was made with `skip_tokenizer_init=True`), None records ids only. `description` goes to the
    session's `prompt` field.
    """
    return VllmRecorder(engine, path, tokenizer=tokenizer, description=description)
