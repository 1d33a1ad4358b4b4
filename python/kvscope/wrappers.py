# SPDX-License-Identifier: GPL-3.0-or-later
"""The wrappers put around cache_utils' methods while a recording is active.

Each wrapper calls the original with the same arguments and returns its result untouched; around the
call it probes what the operation changes and hands that to the cache's CacheTracer (kvscope.tracer),
in the order the C++ engine emits it. Cache wrappers report whole-cache operations; layer wrappers
report a layer's own operation inside a cache operation (crop, offload, prefetch) or on a layer used
without a cache. A wrapper reached again for the same object (a `super()` call) passes through.
"""

import contextlib
import inspect
import math
import operator
import time

import torch

from . import active
from . import cache_api
from . import events as ev
from .tracer import AFTER_OFFLOAD, AFTER_PREFETCH, AFTER_UPDATE, EMPTY

CACHE_METHODS = ("update", "get_mask_sizes", "crop", "reorder_cache", "batch_repeat_interleave",
                 "batch_select_indices", "reset", "update_recurrent_state")
LAYER_METHODS = ("update", "crop", "reorder_cache", "batch_repeat_interleave", "batch_select_indices", "reset",
                 "offload", "prefetch")


class Context:
    """The cache operation in progress, for the layer wrappers it calls."""

    __slots__ = ("cache", "tracer", "op", "offload", "prefetch_end", "index")

    def __init__(self, cache, tracer, op, index=-1):
        self.cache, self.tracer, self.op, self.index = cache, tracer, op, index
        self.offload = None       # (begin, end, bytes) of the offload after an update
        self.prefetch_end = None  # host clock when the prefetch before an update ended


def record_update(rec, tracer, index, layer, before, quantized_before, key_states, value_states, returned,
                  offloads=False, context=None, compute=None):
    """Compute (offloading), Update, WindowSlide, QuantizeFlush, then the offload or the layer's Memory."""
    facts = rec.facts
    flush = None
    if facts.kind(layer) == ev.QUANTIZED and getattr(layer, "_quantized_keys", None) is not quantized_before:
        flush = _flush_error(layer, before, key_states.shape[-2], returned)
    if compute is not None:
        rec._emit(ev.COMPUTE, index, (ev.MEASURED, rec._clock(compute[0]), rec._clock(compute[1])))
    new_bytes = key_states.numel() * key_states.element_size() + value_states.numel() * value_states.element_size()
    tracer.emit_update(index, layer, before, key_states.shape[-2], new_bytes, returned[0].shape[-2], flush)
    if offloads and context is not None and context.offload is not None:
        begin, end, nbytes = context.offload
        rec._emit(ev.TRANSFER, index, (ev.OFFLOAD, ev.LANE_COMPUTE, ev.MEASURED, rec._clock(begin),
                                       rec._clock(end), nbytes))
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

@contextlib.contextmanager
def _inside(rec, obj, context=None):
    """Marks `obj` as being recorded while its original runs, so that its super() calls pass through;
    with a `context`, the layer wrappers it reaches see that cache operation."""
    outer = rec._context
    if context is not None:
        rec._context = context
    rec._inside.add(id(obj))
    try:
        yield
    finally:
        rec._inside.discard(id(obj))
        rec._context = outer


def _unrecorded(rec, obj):
    """Runs an operation the recorder gave up on: it and the layer operations it reaches go unrecorded
    (a context whose op no layer wrapper records)."""
    return _inside(rec, obj, Context(None, None, "lost"))


# --- cache wrappers: one operation of a whole cache ---------------------------------------------
#
# Every wrapper has the same shape: what it needs before the call (probes) and what it records after
# are each guarded; whatever fails there is lost (Recorder.lose), never raised; the original runs once,
# with the caller's arguments, and its result or exception reaches the caller unchanged.

def _cache_update(original):
    def update(self, key_states, value_states, layer_idx, *args, **kwargs):
        rec = active.current
        if rec is None or id(self) in rec._inside:
            return original(self, key_states, value_states, layer_idx, *args, **kwargs)
        if id(self) in rec.not_recorded:
            with _unrecorded(rec, self):
                return original(self, key_states, value_states, layer_idx, *args, **kwargs)
        try:
            rec._ensure_step()
            rec._note_device(key_states)
            tracer = rec._tracer_for(self)
            layers = self.layers
            index = layer_idx + len(layers) if layer_idx < 0 else layer_idx
            layer = layers[index] if 0 <= index < len(layers) else None
            before = tracer.probe(layer) if layer is not None else EMPTY
            quantized_before = getattr(layer, "_quantized_keys", None)
            context = Context(self, tracer, "update", index)
            offloading = bool(getattr(self, "offloading", False))
        except Exception as error:
            rec.lose("update", error)
            with _unrecorded(rec, self):
                return original(self, key_states, value_states, layer_idx, *args, **kwargs)
        start = time.perf_counter_ns() if offloading else 0
        with _inside(rec, self, context):
            returned = original(self, key_states, value_states, layer_idx, *args, **kwargs)
        end = time.perf_counter_ns() if offloading else 0
        try:
            if layer_idx < 0:
                index = layer_idx + len(self.layers)
            layer = self.layers[index]
            compute = None
            if offloading:
                begin = context.prefetch_end or start
                compute = (begin, context.offload[0] if context.offload else end)
            record_update(rec, tracer, index, layer, before, quantized_before, key_states, value_states, returned,
                          offloads=offloading, context=context, compute=compute)
        except Exception as error:
            rec.lose("update", error)
        return returned
    return update


def _cache_mask_sizes(original):
    # The caller may pass either argument by keyword, or rely on a default for layer_idx.
    try:
        parameter = inspect.signature(original).parameters.get("layer_idx")
    except (TypeError, ValueError):  # a callable without a signature: layer 0 by default
        parameter = None
    default_layer = parameter.default if parameter is not None and parameter.default is not inspect.Parameter.empty \
        else 0

    def get_mask_sizes(self, *args, **kwargs):
        rec = active.current
        result = original(self, *args, **kwargs)
        if rec is not None and id(self) not in rec._inside and id(self) not in rec.not_recorded:
            try:
                query = args[0] if args else kwargs.get("query_length", kwargs.get("cache_position"))
                layer_idx = args[1] if len(args) > 1 else kwargs.get("layer_idx", default_layer)
                # Some Transformers versions pass the query's cache positions: their count is its length.
                query_length = query.numel() if isinstance(query, torch.Tensor) and query.dim() > 0 \
                    else operator.index(query)
                # operator.index, not int: a float or a many-element tensor is not a length to record.
                fields = (query_length, operator.index(result[0]), operator.index(result[1]))
                layer = operator.index(layer_idx)
                layer = layer + len(self.layers) if layer < 0 else layer
                rec._ensure_step()
                rec._tracer_for(self)
                rec._emit(ev.MASK_SIZES, layer, fields)
            except Exception as error:
                rec.lose("get_mask_sizes", error)
        return result
    return get_mask_sizes


def _cache_op(op):
    """Crop, reorder, batch ops and reset of a whole cache (Cache::crop, reorder, ... in the engine)."""
    def make(original):
        def operation(self, *args, **kwargs):
            rec = active.current
            if rec is None or id(self) in rec._inside:
                return original(self, *args, **kwargs)
            if id(self) in rec.not_recorded:
                with _unrecorded(rec, self):
                    return original(self, *args, **kwargs)
            try:
                rec._ensure_step()
                tracer = rec._tracer_for(self)
                facts = rec.facts
                batch_before = facts.batch_size(self.layers) if op in ("batch_repeat_interleave",
                                                                       "batch_select_indices") else 0
            except Exception as error:
                rec.lose(op, error)
                with _unrecorded(rec, self):
                    return original(self, *args, **kwargs)
            with _inside(rec, self, Context(self, tracer, op)):
                result = original(self, *args, **kwargs)
            try:
                _record_cache_op(rec, op, self, tracer, args, kwargs, batch_before)
            except Exception as error:
                rec.lose(op, error)
            return result
        return operation
    return make


def _record_cache_op(rec, op, cache, tracer, args, kwargs, batch_before):
    argument = args[0] if args else next(iter(kwargs.values()), None)
    facts = rec.facts
    if op == "crop":
        tracer.emit_totals_if_changed()  # the layers reported themselves
        return
    if op == "reset":
        rec._emit(ev.RESET, -1, ())
    elif op == "reorder_cache":
        rec._emit(ev.REORDER, -1, (cache_api.indices_of(argument),))
    elif op == "batch_repeat_interleave":
        rec._emit(ev.BATCH_REPEAT, -1, (int(argument), batch_before, facts.batch_size(cache.layers)))
    elif op == "batch_select_indices":
        rec._emit(ev.BATCH_SELECT, -1, (cache_api.indices_of(argument), batch_before,
                                        facts.batch_size(cache.layers)))
    tracer.emit_all_memory(cache.layers)


def _cache_recurrent(original):
    def update_recurrent_state(self, recurrent_states, layer_idx, *args, **kwargs):
        rec = active.current
        result = original(self, recurrent_states, layer_idx, *args, **kwargs)
        if rec is not None and id(self) not in rec._inside and id(self) not in rec.not_recorded:
            try:
                rec._ensure_step()
                layer = self.layers[layer_idx]
                if not rec.facts.is_attention(layer):
                    index = layer_idx + len(self.layers) if layer_idx < 0 else layer_idx
                    rec._tracer_for(self).emit_state_update(index, layer)
            except Exception as error:
                rec.lose("update_recurrent_state", error)
        return result
    return update_recurrent_state


CACHE_WRAPPERS = {
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
        rec = active.current
        if rec is None or id(self) in rec._inside or rec._context is not None:
            return original(self, key_states, value_states, *args, **kwargs)  # the cache reports it
        try:
            rec._ensure_step()
            rec._note_device(key_states)
            tracer, index, _ = rec._layer_place(self)
            before = tracer.probe(self)
            quantized_before = getattr(self, "_quantized_keys", None)
        except Exception as error:
            rec.lose("update", error)
            with _unrecorded(rec, self):
                return original(self, key_states, value_states, *args, **kwargs)
        with _inside(rec, self):
            returned = original(self, key_states, value_states, *args, **kwargs)
        try:
            record_update(rec, tracer, index, self, before, quantized_before, key_states, value_states, returned)
        except Exception as error:
            rec.lose("update", error)
        return returned
    return update


def _crop_argument(args, kwargs):
    """The one argument of a layer's crop, however it was passed: the seed's `max_length`, the release's
    `tokens_to_remove` (Transformers 5.18; a negative count means the same in both)."""
    if args:
        return args[0]
    for name in ("tokens_to_remove", "max_length", "maximum_length"):
        if name in kwargs:
            return kwargs[name]
    return next(iter(kwargs.values()), 0)


def _layer_crop(original):
    def crop(self, *args, **kwargs):
        rec = active.current
        if rec is None or id(self) in rec._inside or (rec._context is not None and rec._context.op == "lost"):
            return original(self, *args, **kwargs)
        try:
            rec._ensure_step()
            tracer, index, context = rec._layer_place(self)
            before = tracer.probe(self)
        except Exception as error:
            rec.lose("crop", error)
            with _unrecorded(rec, self):
                return original(self, *args, **kwargs)
        with _inside(rec, self):
            result = original(self, *args, **kwargs)
        try:
            tracer.emit_crop(index, self, before, int(_crop_argument(args, kwargs)))
            tracer.emit_memory(index, self, tracer.is_on_host(index))
            if context is None:
                tracer.emit_totals_if_changed()
        except Exception as error:
            rec.lose("crop", error)
        return result
    return crop


def _layer_op(op):
    """Reorder, batch ops and reset of one layer used without a cache (a cache's are reported by it)."""
    def make(original):
        def operation(self, *args, **kwargs):
            rec = active.current
            if rec is None or id(self) in rec._inside or rec._context is not None:
                return original(self, *args, **kwargs)
            try:
                rec._ensure_step()
                tracer, index, _ = rec._layer_place(self)
                batch_before = rec.facts.batch_size([self])
            except Exception as error:
                rec.lose(op, error)
                with _unrecorded(rec, self):
                    return original(self, *args, **kwargs)
            with _inside(rec, self):
                result = original(self, *args, **kwargs)
            try:
                _record_layer_op(rec, op, self, tracer, index, args, kwargs, batch_before)
            except Exception as error:
                rec.lose(op, error)
            return result
        return operation
    return make


def _record_layer_op(rec, op, layer, tracer, index, args, kwargs, batch_before):
    argument = args[0] if args else next(iter(kwargs.values()), None)
    if op == "reset":
        rec._emit(ev.RESET, index, ())
    elif op == "reorder_cache":
        rec._emit(ev.REORDER, index, (cache_api.indices_of(argument),))
    elif op == "batch_repeat_interleave":
        rec._emit(ev.BATCH_REPEAT, index, (int(argument), batch_before, rec.facts.batch_size([layer])))
    else:
        rec._emit(ev.BATCH_SELECT, index, (cache_api.indices_of(argument), batch_before,
                                           rec.facts.batch_size([layer])))
    tracer.emit_memory(index, layer, tracer.is_on_host(index))
    tracer.emit_totals_if_changed()


def _layer_offload(original):
    def offload(self, *args, **kwargs):
        rec = active.current
        context = rec._context if rec is not None else None
        if context is None or context.op != "update" or id(self) in rec._inside:
            return original(self, *args, **kwargs)
        try:
            tracer, index, _ = rec._layer_place(self)
        except Exception as error:
            rec.lose("offload", error)
            with _unrecorded(rec, self):
                return original(self, *args, **kwargs)
        begin = time.perf_counter_ns()
        with _inside(rec, self):
            result = original(self, *args, **kwargs)
        end = time.perf_counter_ns()
        try:
            while len(tracer.on_host) <= index:
                tracer.on_host.append(False)
            tracer.on_host[index] = True
            if index == context.index:
                context.offload = (begin, end, rec.facts.transfer_bytes(self, rec.facts.kind(self)))
        except Exception as error:
            rec.lose("offload", error)
        return result
    return offload


def _layer_prefetch(original):
    def prefetch(self, *args, **kwargs):
        rec = active.current
        context = rec._context if rec is not None else None
        if context is None or context.op != "update" or id(self) in rec._inside:
            return original(self, *args, **kwargs)
        try:
            tracer, index, _ = rec._layer_place(self)
            moves = tracer.is_on_host(index)
        except Exception as error:
            rec.lose("prefetch", error)
            with _unrecorded(rec, self):
                return original(self, *args, **kwargs)
        begin = time.perf_counter_ns()
        with _inside(rec, self):
            result = original(self, *args, **kwargs)
        end = time.perf_counter_ns()
        try:
            context.prefetch_end = end
            if moves:
                tracer.on_host[index] = False
                rec._emit(ev.TRANSFER, index, (ev.PREFETCH, ev.LANE_PREFETCH, ev.MEASURED, rec._clock(begin),
                                               rec._clock(end), rec.facts.transfer_bytes(self, rec.facts.kind(self))))
                tracer.report_memory(index, self, False, AFTER_PREFETCH)
        except Exception as error:
            rec.lose("prefetch", error)
        return result
    return prefetch


LAYER_WRAPPERS = {
    "update": _layer_update,
    "crop": _layer_crop,
    "reorder_cache": _layer_op("reorder_cache"),
    "batch_repeat_interleave": _layer_op("batch_repeat_interleave"),
    "batch_select_indices": _layer_op("batch_select_indices"),
    "reset": _layer_op("reset"),
    "offload": _layer_offload,
    "prefetch": _layer_prefetch,
}
