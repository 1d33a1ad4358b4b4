# SPDX-License-Identifier: GPL-3.0-or-later
"""The folded cache state after a step, for the Snapshot chunks of sessions/FORMAT.md.

A port of engine/trace/src/StateReducer.cpp (same rules, same field order as EventCodec's
snapshot encoding): the C++ writer stores this state before the first chunk of every 256th step
so that `kvscope-cli replay --step K` folds at most 256 steps; a Python-written session must seek
the same way. Only run at snapshot time, over the steps since the last one, so recording pays
nothing for it on the hot path.
"""

import struct

from . import events as ev

_LAYER_INTS = ("seq_length", "stored_tokens", "capacity", "returned_tokens", "last_update_step",
               "query_length", "kv_length", "kv_offset", "window_start", "window_end", "window_size",
               "evicted_tokens", "residual_tokens", "quantized_tokens", "last_flush_step")
_DEVICE, _HOST = 0, 1


class LayerState:
    """trace::LayerState: one layer as the events describe it."""

    __slots__ = ("initialized", "kind", *_LAYER_INTS, "last_flush_relative_error", "residency",
                 "bytes_device", "bytes_device_quantized", "bytes_host", "batch_size")

    def __init__(self):
        self.initialized = False
        self.kind = ev.DYNAMIC
        for name in _LAYER_INTS:
            setattr(self, name, 0)
        self.capacity = -1
        self.last_update_step = -1
        self.last_flush_step = -1
        self.last_flush_relative_error = 0.0
        self.residency = _DEVICE
        self.bytes_device = 0
        self.bytes_device_quantized = 0
        self.bytes_host = 0
        self.batch_size = 0

    def apply(self, kind, step, f):
        """Folds one layer-scoped event (LayerFolder in StateReducer.cpp)."""
        if kind == ev.UPDATE:
            self.initialized = True
            self.kind = f[6]
            self.seq_length, self.stored_tokens, self.capacity, self.returned_tokens = f[1], f[2], f[3], f[4]
            self.bytes_device = f[5]
            self.last_update_step = step
            if self.kind in ev.SLIDING_KINDS:
                self.window_start = f[1] - f[2]
                self.window_end = f[1]
            if self.kind == ev.QUANTIZED:
                self.residual_tokens = max(0, self.seq_length - self.quantized_tokens)
        elif kind == ev.MASK_SIZES:
            self.query_length, self.kv_length, self.kv_offset = f
        elif kind == ev.WINDOW_SLIDE:
            self.window_start, self.window_end, self.window_size = f[1], f[2], f[3]
            self.stored_tokens = f[2] - f[1]
            self.evicted_tokens += f[0]
        elif kind == ev.QUANTIZE_FLUSH:
            self.residual_tokens = f[2]
            self.quantized_tokens = f[3]
            self.last_flush_step = step
            self.last_flush_relative_error = f[8]
            self.bytes_device = f[5]
        elif kind == ev.TRANSFER:
            if f[0] == ev.OFFLOAD:
                self.residency = _HOST
                self.bytes_host, self.bytes_device, self.bytes_device_quantized = f[5], 0, 0
            else:
                self.residency = _DEVICE
                self.bytes_device, self.bytes_device_quantized, self.bytes_host = f[5], 0, 0
        elif kind == ev.CROP:
            removed = max(0, f[1] - f[2])
            self.seq_length = f[2]
            self.stored_tokens = max(0, self.stored_tokens - removed)
            if self.kind in ev.SLIDING_KINDS:
                self.window_start = self.seq_length - self.stored_tokens
                self.window_end = self.seq_length
            if self.kind == ev.QUANTIZED:
                self.quantized_tokens = min(self.quantized_tokens, self.seq_length)
                self.residual_tokens = self.seq_length - self.quantized_tokens
        elif kind in (ev.BATCH_REPEAT, ev.BATCH_SELECT):
            self.batch_size = f[-1]
        elif kind == ev.RESET:
            for name in ("seq_length", "stored_tokens", "returned_tokens", "query_length", "kv_length",
                         "kv_offset", "window_start", "window_end", "evicted_tokens", "residual_tokens",
                         "quantized_tokens"):
                setattr(self, name, 0)
        elif kind == ev.MEMORY:
            self.bytes_device = f[0] + f[1]
            self.bytes_device_quantized = f[1]
            self.bytes_host = f[2]

    def encode(self, out: bytearray) -> None:
        out += struct.pack("<BB15qdBqqqq", 1 if self.initialized else 0, self.kind,
                           *(getattr(self, name) for name in _LAYER_INTS), self.last_flush_relative_error,
                           self.residency, self.bytes_device, self.bytes_device_quantized, self.bytes_host,
                           self.batch_size)


class StepState:
    """trace::StepState: every layer plus the step's token, text and cache-wide memory."""

    def __init__(self):
        self.step = 0
        self.layers = []
        self.memory = (0, 0, 0)
        self.begin_step(0)

    def begin_step(self, step: int) -> None:
        self.step = step
        self.input_token_id, self.input_text = -1, ""
        self.token_id, self.token_text, self.wall_ns = -1, "", 0

    def apply(self, event: tuple) -> None:
        kind, step, layer, fields = event
        if kind == ev.STEP_BEGIN:
            self.input_token_id, self.input_text = fields
        elif kind == ev.STEP_END:
            self.token_id, self.token_text, self.wall_ns = fields
        elif kind in (ev.LOGITS, ev.LOST):
            pass
        elif kind == ev.MEMORY and layer < 0:
            self.memory = fields
        elif layer >= 0:
            while len(self.layers) <= layer:
                self.layers.append(LayerState())
            self.layers[layer].apply(kind, step, fields)
        else:
            for state in self.layers:
                state.apply(kind, step, fields)

    def encode(self) -> bytes:
        """The Snapshot payload (EventCodec::encode(StepState))."""
        out = bytearray(struct.pack("<qqqqq", self.step, *self.memory, self.input_token_id))
        for text in (self.input_text,):
            data = text.encode("utf-8", errors="replace")
            out += struct.pack("<I", len(data)) + data
        out += struct.pack("<q", self.token_id)
        data = self.token_text.encode("utf-8", errors="replace")
        out += struct.pack("<I", len(data)) + data
        out += struct.pack("<qI", self.wall_ns, len(self.layers))
        for state in self.layers:
            state.encode(out)
        return bytes(out)
