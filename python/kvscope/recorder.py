# SPDX-License-Identifier: GPL-3.0-or-later
"""`kvscope.record(...)`: observe a Transformers run's KV caches and write a kvscope session.

While a recorder is active, the methods of `transformers.cache_utils`' cache and layer classes (and
of every subclass that exists at that moment, e.g. a quantization backend's layer) are wrapped: the
wrapper calls the original with the same arguments, returns its result untouched, and reports what
changed as the C++ engine's CacheTracer would (kvscope.tracer). The model's `forward` is shadowed on
the model object so that each forward is one step. On exit everything is put back, also after an
exception; the file is finished (index and footer), or after an exception left as a crash leaves it,
its finished steps readable.
"""

import importlib
import json
import math
import os
import time

import torch

from . import cache_api
from . import events as ev
from .patching import Patches, all_subclasses
from .session_file import SessionFile
from .tracer import EMPTY, AFTER_OFFLOAD, AFTER_PREFETCH, AFTER_UPDATE, CacheTracer

__version__ = "0.1.0"

_active = None  # the one active Recorder: wrappers look it up in one global read

_CACHE_METHODS = ("update", "get_mask_sizes", "crop", "reorder_cache", "batch_repeat_interleave",
                  "batch_select_indices", "reset", "update_recurrent_state")
_LAYER_METHODS = ("update", "crop", "reorder_cache", "batch_repeat_interleave", "batch_select_indices", "reset",
                  "offload", "prefetch")


class _Context:
    """The cache operation in progress, for the layer wrappers it calls."""

    __slots__ = ("cache", "tracer", "op", "offload", "prefetch_end", "index")

    def __init__(self, cache, tracer, op, index=-1):
        self.cache, self.tracer, self.op, self.index = cache, tracer, op, index
        self.offload = None       # (begin, end, bytes) of the offload after an update
        self.prefetch_end = None  # host clock when the prefetch before an update ended


class _StandaloneLayers:
    """Layers used without a Cache: numbered in the order they are first seen."""

    def __init__(self):
        self.layers = []
        self.offloading = False


class Recorder:
    """Writes one session file; use it through `kvscope.record`."""

    def __init__(self, path, model=None, tokenizer=None, cache_utils=None, prompt=None, seed=0):
        self.path = os.fspath(path)
        self.model = model
        self.tokenizer = tokenizer
        self._cu_given = cache_utils
        self._prompt = prompt
        self._seed = int(seed)
        self._patches = Patches()
        self._file = None
        self._early = []          # events before the header can be written (the cache is not known yet)
        self._step = 0
        self._step_open = False
        self._step_start = 0
        self._forwards = 0
        self._tracers = {}        # id(cache) -> (cache, CacheTracer, on_host list)
        self._standalone = _StandaloneLayers()
        self._context = None
        self._inside = set()      # ids of objects whose operation is being recorded (super() calls pass through)
        self._clock0 = None
        self._device = None
        self.cu = None
        self.facts = None
        self.steps_written = 0

    # --- lifecycle -------------------------------------------------------------------------

    def __enter__(self):
        global _active
        if _active is not None:
            raise RuntimeError("kvscope.record: a recording is already active (%s); nest no recordings"
                               % _active.path)
        cu = self._cu_given
        if cu is None:
            try:
                cu = importlib.import_module("transformers.cache_utils")
            except ImportError as error:
                raise cache_api.UnsupportedCacheAPI(
                    "kvscope.record: transformers.cache_utils cannot be imported (%s); install transformers" % error)
        cache_api.check(cu)
        self.cu = cu
        self.facts = cache_api.LayerFacts(cu)
        try:
            self._patch()
        except BaseException:
            self._patches.restore()
            raise
        _active = self
        return self

    def __exit__(self, exc_type, exc, traceback):
        global _active
        try:
            if exc_type is None and self._step_open:
                self._close_step(-1, "")
        finally:
            _active = None
            self._patches.restore()
            self._write_header_if_needed()
            if exc_type is None:
                self._file.finish()
            else:
                # What a crash leaves: the finished steps, no footer; readers keep them and say so.
                self._file.close_unfinished()
        return False

    def next_step(self) -> int:
        """Closes the step of raw cache calls made since the last one (no model); returns its number."""
        if not self._step_open:
            self._open_step(-1, "")
        step = self._step
        self._close_step(-1, "")
        self._step += 1
        return step

    # --- events ----------------------------------------------------------------------------

    def _emit(self, kind, layer, fields):
        event = (kind, self._step, layer, fields)
        if self._file is None:
            self._early.append(event)
        else:
            self._file.emit(event)

    def _ensure_step(self):
        """Raw calls (no model) open their step lazily; with a model, forwards open steps."""
        if not self._step_open and self.model is None:
            self._open_step(-1, "")

    def _open_step(self, token_id, text):
        self._step_open = True
        self._step_start = time.perf_counter_ns()
        self._emit(ev.STEP_BEGIN, -1, (int(token_id), text))

    def _close_step(self, token_id, text, logits=None):
        for _, tracer, _ in self._tracers.values():
            tracer.emit_totals_if_changed()
        if logits is not None:
            self._emit(ev.LOGITS, -1, logits)
        wall = time.perf_counter_ns() - self._step_start
        self._write_header_if_needed()
        self._emit(ev.STEP_END, -1, (int(token_id), text, wall))
        self._step_open = False
        self.steps_written += 1

    def _clock(self, ns):
        """The session clock: nanoseconds from the first timed operation."""
        if self._clock0 is None:
            self._clock0 = ns
        return ns - self._clock0

    def _write_header_if_needed(self):
        if self._file is not None:
            return
        self._file = SessionFile(self.path, self._metadata())
        early, self._early = self._early, []
        for event in early:
            self._file.emit(event)

    # --- metadata --------------------------------------------------------------------------

    def _metadata(self) -> dict:
        cache = next(iter(self._tracers.values()))[0] if self._tracers else None
        model_name, model_config = "", {}
        if self.model is not None:
            config = getattr(self.model, "config", None)
            model_name = getattr(config, "_name_or_path", "") or type(self.model).__name__
            model_config = _config_dict(config)
        transformers_version = cache_api._transformers_version()
        return {
            # Readers show only the keys they know: the versions go in the writer's name too.
            "kvscope_version": "kvscope-python %s (transformers %s, torch %s)" % (
                __version__, transformers_version, torch.__version__),
            "model": model_name,
            "model_config": model_config,
            "cache": _cache_kind(cache, self.facts) if cache is not None else "",
            "cache_settings": _cache_settings(cache, self.facts) if cache is not None else {},
            "device": self._device or "cpu",
            "seed": self._seed,
            "prompt": self._prompt or "",
            "created_unix_ns": time.time_ns(),
            "recorder": "python",
            "transformers_version": transformers_version,
            "torch_version": torch.__version__,
        }

    # --- patches ---------------------------------------------------------------------------

    def _patch(self):
        cu = self.cu
        encoder_decoder = getattr(cu, "EncoderDecoderCache", None)
        for cls in all_subclasses(cu.Cache):
            if encoder_decoder is not None and issubclass(cls, encoder_decoder):
                continue  # it delegates to its two inner caches, which record themselves
            for name in _CACHE_METHODS:
                self._patches.wrap(cls, name, _CACHE_WRAPPERS[name])
        roots = [cu.CacheLayerMixin]
        if getattr(cu, "LinearAttentionCacheLayerMixin", None) is not None:
            roots.append(cu.LinearAttentionCacheLayerMixin)
        done = set()
        for root in roots:
            for cls in all_subclasses(root):
                if cls in done:
                    continue
                done.add(cls)
                for name in _LAYER_METHODS:
                    self._patches.wrap(cls, name, _LAYER_WRAPPERS[name])
        if self.model is not None:
            self._patches.set_instance_attribute(self.model, "forward", _forward_wrapper(self, self.model.forward))

    # --- tracers ---------------------------------------------------------------------------

    def _tracer_for(self, cache):
        entry = self._tracers.get(id(cache))
        if entry is None or entry[0] is not cache:
            on_host = []
            entry = (cache, CacheTracer(self._emit, self.facts, cache.layers, on_host), on_host)
            self._tracers[id(cache)] = entry
        return entry[1]

    def _standalone_index(self, layer):
        layers = self._standalone.layers
        for index, known in enumerate(layers):
            if known is layer:
                return index
        layers.append(layer)
        return len(layers) - 1

    def _layer_place(self, layer):
        """(tracer, index, owner) of a layer: its cache's, or the standalone registry's."""
        context = self._context
        if context is not None:
            for index, known in enumerate(context.cache.layers):
                if known is layer:
                    return context.tracer, index, context
        index = self._standalone_index(layer)
        return self._tracer_for(self._standalone), index, None

    def _note_device(self, tensor):
        if self._device is None and isinstance(tensor, torch.Tensor):
            self._device = tensor.device.type

    # --- updates ---------------------------------------------------------------------------

    def _record_update(self, tracer, index, layer, before, quantized_before, key_states, value_states, returned,
                       offloads=False, context=None, compute=None):
        facts = self.facts
        flush = None
        if facts.kind(layer) == ev.QUANTIZED and getattr(layer, "_quantized_keys", None) is not quantized_before:
            flush = _flush_error(layer, before, key_states.shape[-2], returned)
        if compute is not None:
            self._emit(ev.COMPUTE, index, (ev.MEASURED, self._clock(compute[0]), self._clock(compute[1])))
        new_bytes = key_states.numel() * key_states.element_size() + value_states.numel() * value_states.element_size()
        tracer.emit_update(index, layer, before, key_states.shape[-2], new_bytes, returned[0].shape[-2], flush)
        if offloads and context is not None and context.offload is not None:
            begin, end, nbytes = context.offload
            self._emit(ev.TRANSFER, index, (ev.OFFLOAD, ev.LANE_COMPUTE, ev.MEASURED, self._clock(begin),
                                            self._clock(end), nbytes))
            tracer.report_memory(index, layer, True, AFTER_OFFLOAD)
        else:
            tracer.report_memory(index, layer, tracer.is_on_host(index), AFTER_UPDATE)


def _flush_error(layer, before, tokens_in, returned):
    """(tokens moved, max, mean and relative error) of dequantize(quantize(x)) over the moved tokens."""
    moved = before.residual_tokens + tokens_in
    totals = [0.0, 0.0, 0.0, 0.0, 0]  # max abs, sum abs, sum squared error, sum squared, elements
    with torch.no_grad():
        for original, quantized in ((returned[0], layer._quantized_keys), (returned[1], layer._quantized_values)):
            restored = layer._dequantize(quantized)
            x = original[..., original.shape[-2] - moved:, :].double()
            difference = (x - restored[..., restored.shape[-2] - moved:, :].double()).abs()
            if difference.numel():
                totals[0] = max(totals[0], difference.max().item())
            totals[1] += difference.sum().item()
            totals[2] += difference.pow(2).sum().item()
            totals[3] += x.pow(2).sum().item()
            totals[4] += x.numel()
    mean = totals[1] / totals[4] if totals[4] else 0.0
    relative = math.sqrt(totals[2] / totals[3]) if totals[3] > 0 else 0.0
    return moved, totals[0], mean, relative


# --- cache wrappers: one operation of a whole cache ---------------------------------------------

def _cache_update(original):
    def update(self, key_states, value_states, layer_idx, *args, **kwargs):
        rec = _active
        if rec is None or id(self) in rec._inside:
            return original(self, key_states, value_states, layer_idx, *args, **kwargs)
        rec._ensure_step()
        rec._note_device(key_states)
        tracer = rec._tracer_for(self)
        layers = self.layers
        index = layer_idx + len(layers) if layer_idx < 0 else layer_idx
        layer = layers[index] if 0 <= index < len(layers) else None
        before = tracer.probe(layer) if layer is not None else EMPTY
        quantized_before = getattr(layer, "_quantized_keys", None)
        context = _Context(self, tracer, "update", index)
        outer, rec._context = rec._context, context
        rec._inside.add(id(self))
        offloading = bool(getattr(self, "offloading", False))
        start = time.perf_counter_ns() if offloading else 0
        try:
            returned = original(self, key_states, value_states, layer_idx, *args, **kwargs)
        finally:
            rec._inside.discard(id(self))
            rec._context = outer
        end = time.perf_counter_ns() if offloading else 0
        if layer_idx < 0:
            index = layer_idx + len(self.layers)
        layer = self.layers[index]
        compute = None
        if offloading:
            begin = context.prefetch_end or start
            compute = (begin, context.offload[0] if context.offload else end)
        rec._record_update(tracer, index, layer, before, quantized_before, key_states, value_states, returned,
                           offloads=offloading, context=context, compute=compute)
        return returned
    return update


def _cache_mask_sizes(original):
    def get_mask_sizes(self, query_length, layer_idx, *args, **kwargs):
        rec = _active
        result = original(self, query_length, layer_idx, *args, **kwargs)
        if rec is not None and id(self) not in rec._inside:
            rec._ensure_step()
            layer = layer_idx + len(self.layers) if layer_idx < 0 else layer_idx
            rec._tracer_for(self)
            rec._emit(ev.MASK_SIZES, int(layer), (int(query_length), int(result[0]), int(result[1])))
        return result
    return get_mask_sizes


def _cache_op(op):
    """Crop, reorder, batch ops and reset of a whole cache (Cache::crop, reorder, ... in the engine)."""
    def make(original):
        def operation(self, *args, **kwargs):
            rec = _active
            if rec is None or id(self) in rec._inside:
                return original(self, *args, **kwargs)
            rec._ensure_step()
            tracer = rec._tracer_for(self)
            facts = rec.facts
            batch_before = facts.batch_size(self.layers) if op in ("batch_repeat_interleave",
                                                                   "batch_select_indices") else 0
            outer, rec._context = rec._context, _Context(self, tracer, op)
            rec._inside.add(id(self))
            try:
                result = original(self, *args, **kwargs)
            finally:
                rec._inside.discard(id(self))
                rec._context = outer
            argument = args[0] if args else next(iter(kwargs.values()), None)
            if op == "crop":
                tracer.emit_totals_if_changed()  # the layers reported themselves
                return result
            if op == "reset":
                rec._emit(ev.RESET, -1, ())
            elif op == "reorder_cache":
                rec._emit(ev.REORDER, -1, (cache_api.indices_of(argument),))
            elif op == "batch_repeat_interleave":
                rec._emit(ev.BATCH_REPEAT, -1, (int(argument), batch_before, facts.batch_size(self.layers)))
            elif op == "batch_select_indices":
                rec._emit(ev.BATCH_SELECT, -1, (cache_api.indices_of(argument), batch_before,
                                                facts.batch_size(self.layers)))
            tracer.emit_all_memory(self.layers)
            return result
        return operation
    return make


def _cache_recurrent(original):
    def update_recurrent_state(self, recurrent_states, layer_idx, *args, **kwargs):
        rec = _active
        result = original(self, recurrent_states, layer_idx, *args, **kwargs)
        if rec is not None and id(self) not in rec._inside:
            rec._ensure_step()
            layer = self.layers[layer_idx]
            if not rec.facts.is_attention(layer):
                index = layer_idx + len(self.layers) if layer_idx < 0 else layer_idx
                rec._tracer_for(self).emit_state_update(index, layer)
        return result
    return update_recurrent_state


_CACHE_WRAPPERS = {
    "update": _cache_update,
    "get_mask_sizes": _cache_mask_sizes,
    "crop": _cache_op("crop"),
    "reorder_cache": _cache_op("reorder_cache"),
    "batch_repeat_interleave": _cache_op("batch_repeat_interleave"),
    "batch_select_indices": _cache_op("batch_select_indices"),
    "reset": _cache_op("reset"),
    "update_recurrent_state": _cache_recurrent,
}


# --- layer wrappers: a layer's own operation, inside a cache operation or standalone -------------

def _layer_update(original):
    def update(self, key_states, value_states, *args, **kwargs):
        rec = _active
        if rec is None or id(self) in rec._inside or rec._context is not None:
            return original(self, key_states, value_states, *args, **kwargs)  # the cache reports it
        rec._ensure_step()
        rec._note_device(key_states)
        tracer, index, _ = rec._layer_place(self)
        before = tracer.probe(self)
        quantized_before = getattr(self, "_quantized_keys", None)
        rec._inside.add(id(self))
        try:
            returned = original(self, key_states, value_states, *args, **kwargs)
        finally:
            rec._inside.discard(id(self))
        rec._record_update(tracer, index, self, before, quantized_before, key_states, value_states, returned)
        return returned
    return update


def _layer_crop(original):
    def crop(self, max_length, *args, **kwargs):
        rec = _active
        if rec is None or id(self) in rec._inside:
            return original(self, max_length, *args, **kwargs)
        rec._ensure_step()
        tracer, index, context = rec._layer_place(self)
        before = tracer.probe(self)
        rec._inside.add(id(self))
        try:
            result = original(self, max_length, *args, **kwargs)
        finally:
            rec._inside.discard(id(self))
        tracer.emit_crop(index, self, before, int(max_length))
        tracer.emit_memory(index, self, tracer.is_on_host(index))
        if context is None:
            tracer.emit_totals_if_changed()
        return result
    return crop


def _layer_op(op):
    """Reorder, batch ops and reset of one layer used without a cache (a cache's are reported by it)."""
    def make(original):
        def operation(self, *args, **kwargs):
            rec = _active
            if rec is None or id(self) in rec._inside or rec._context is not None:
                return original(self, *args, **kwargs)
            rec._ensure_step()
            tracer, index, _ = rec._layer_place(self)
            batch_before = rec.facts.batch_size([self])
            rec._inside.add(id(self))
            try:
                result = original(self, *args, **kwargs)
            finally:
                rec._inside.discard(id(self))
            argument = args[0] if args else next(iter(kwargs.values()), None)
            if op == "reset":
                rec._emit(ev.RESET, index, ())
            elif op == "reorder_cache":
                rec._emit(ev.REORDER, index, (cache_api.indices_of(argument),))
            elif op == "batch_repeat_interleave":
                rec._emit(ev.BATCH_REPEAT, index, (int(argument), batch_before, rec.facts.batch_size([self])))
            else:
                rec._emit(ev.BATCH_SELECT, index, (cache_api.indices_of(argument), batch_before,
                                                   rec.facts.batch_size([self])))
            tracer.emit_memory(index, self, tracer.is_on_host(index))
            tracer.emit_totals_if_changed()
            return result
        return operation
    return make


def _layer_offload(original):
    def offload(self, *args, **kwargs):
        rec = _active
        context = rec._context if rec is not None else None
        if context is None or context.op != "update" or id(self) in rec._inside:
            return original(self, *args, **kwargs)
        tracer, index, _ = rec._layer_place(self)
        rec._inside.add(id(self))
        begin = time.perf_counter_ns()
        try:
            result = original(self, *args, **kwargs)
        finally:
            rec._inside.discard(id(self))
        end = time.perf_counter_ns()
        while len(tracer.on_host) <= index:
            tracer.on_host.append(False)
        tracer.on_host[index] = True
        if index == context.index:
            context.offload = (begin, end, rec.facts.transfer_bytes(self, rec.facts.kind(self)))
        return result
    return offload


def _layer_prefetch(original):
    def prefetch(self, *args, **kwargs):
        rec = _active
        context = rec._context if rec is not None else None
        if context is None or context.op != "update" or id(self) in rec._inside:
            return original(self, *args, **kwargs)
        tracer, index, _ = rec._layer_place(self)
        moves = tracer.is_on_host(index)
        rec._inside.add(id(self))
        begin = time.perf_counter_ns()
        try:
            result = original(self, *args, **kwargs)
        finally:
            rec._inside.discard(id(self))
        end = time.perf_counter_ns()
        context.prefetch_end = end
        if moves:
            tracer.on_host[index] = False
            rec._emit(ev.TRANSFER, index, (ev.PREFETCH, ev.LANE_PREFETCH, ev.MEASURED, rec._clock(begin),
                                           rec._clock(end), rec.facts.transfer_bytes(self, rec.facts.kind(self))))
            tracer.report_memory(index, self, False, AFTER_PREFETCH)
        return result
    return prefetch


_LAYER_WRAPPERS = {
    "update": _layer_update,
    "crop": _layer_crop,
    "reorder_cache": _layer_op("reorder_cache"),
    "batch_repeat_interleave": _layer_op("batch_repeat_interleave"),
    "batch_select_indices": _layer_op("batch_select_indices"),
    "reset": _layer_op("reset"),
    "offload": _layer_offload,
    "prefetch": _layer_prefetch,
}


# --- the model: one step per forward -------------------------------------------------------------

def _forward_wrapper(rec, forward):
    def recorded_forward(*args, **kwargs):
        if _active is not rec:
            return forward(*args, **kwargs)
        input_ids = kwargs.get("input_ids")
        if input_ids is None and args and isinstance(args[0], torch.Tensor):
            input_ids = args[0]
        if rec._step_open:
            rec._close_step(-1, "")
        if rec._forwards > 0:
            rec._step += 1
        rec._forwards += 1
        if rec._step == 0:
            token = -1
            text = rec._prompt if rec._prompt is not None else _decode(rec.tokenizer, input_ids, row=True)
            if rec._prompt is None:
                rec._prompt = text
        else:
            token = int(input_ids[0, -1]) if isinstance(input_ids, torch.Tensor) and input_ids.numel() else -1
            text = _decode(rec.tokenizer, [token]) if token >= 0 else ""
        rec._open_step(token, text)
        output = forward(*args, **kwargs)
        logits = getattr(output, "logits", None)
        if logits is None and isinstance(output, (tuple, list)) and output and isinstance(output[0], torch.Tensor):
            logits = output[0]
        elif logits is None and isinstance(output, torch.Tensor):
            logits = output
        token, payload = -1, None
        if isinstance(logits, torch.Tensor) and logits.dim() >= 2:
            row = logits[0, -1] if logits.dim() == 3 else logits[0]
            payload, token = _logits_event(row)
        rec._close_step(token, _decode(rec.tokenizer, [token]) if token >= 0 else "", payload)
        return output
    return recorded_forward


def _logits_event(row):
    """(LOGITS fields, greedy token): the whole vocabulary up to 1024 entries, else the top 256."""
    with torch.no_grad():
        log_probs = torch.log_softmax(row.detach().float(), dim=-1).cpu()
    if log_probs.numel() <= ev.LOGITS_FULL_VOCABULARY_LIMIT:
        values = log_probs.tolist()
        return ([], values, True), int(log_probs.argmax())
    top, ids = torch.topk(log_probs, ev.LOGITS_TOP_COUNT)
    ids = ids.tolist()
    return (ids, top.tolist(), False), ids[0]


def _decode(tokenizer, ids, row=False):
    if tokenizer is None or ids is None:
        return ""
    if row and isinstance(ids, torch.Tensor):
        ids = ids[0].tolist() if ids.dim() == 2 else ids.tolist()
    try:
        return tokenizer.decode(ids)
    except Exception:  # a tokenizer that cannot decode must not break the run
        return ""


def _config_dict(config) -> dict:
    if config is None:
        return {}
    if hasattr(config, "to_dict"):
        data = config.to_dict()
    else:
        data = {k: v for k, v in vars(config).items() if not k.startswith("_")}
    return json.loads(json.dumps(data, default=str))


def _cache_kind(cache, facts) -> str:
    if getattr(cache, "offloading", False):
        return "offloaded"
    kinds = {facts.kind(layer) for layer in getattr(cache, "layers", [])}
    if ev.QUANTIZED in kinds:
        return "quantized"
    if kinds and kinds <= {ev.STATIC, ev.STATIC_SLIDING_WINDOW}:
        return "static"
    return "dynamic"


def _cache_settings(cache, facts) -> dict:
    settings = {"class": type(cache).__name__}
    if hasattr(cache, "offloading"):
        settings["offloading"] = bool(cache.offloading)
        if cache.offloading:
            settings["offload_only_non_sliding"] = bool(getattr(cache, "only_non_sliding", False))
    layers = []
    for layer in getattr(cache, "layers", []):
        entry = {"class": type(layer).__name__}
        for name in ("sliding_window", "max_cache_len", "nbits", "q_group_size", "residual_length", "axis_key",
                     "axis_value"):
            value = getattr(layer, name, None)
            if isinstance(value, (int, float, str, bool)):
                entry[name] = value
        layers.append(entry)
    settings["layers"] = layers
    return settings


def record(path, model=None, tokenizer=None, cache_utils=None, prompt=None, seed=0) -> Recorder:
    """Records every KV-cache operation of the `with` block into the session file `path`.

    With `model`, each forward of the model is one step, with its next-token log-probabilities and,
    given `tokenizer`, the text of the tokens. Without it, `rec.next_step()` closes a step of raw
    cache calls. `cache_utils` defaults to the installed `transformers.cache_utils`.
    """
    return Recorder(path, model=model, tokenizer=tokenizer, cache_utils=cache_utils, prompt=prompt, seed=seed)
