# SPDX-License-Identifier: GPL-3.0-or-later
"""Turns one cache's operations into trace events, as engine/cache/src/CacheTracer.cpp does.

Same events, same fields, same order, and the same economy: a layer's Memory event is emitted only
when the event just before it does not already imply those bytes to a reader folding the session
(StateReducer's rules), and the cache-wide totals only when they changed. Replaying a Python
recording and the engine's recording of the same operations therefore gives the same state at every
step (tests/python/test_engine_comparison.py checks it on every committed cache fixture).
"""

from . import events as ev

AFTER_UPDATE, AFTER_OFFLOAD, AFTER_PREFETCH = 0, 1, 2


class Before:
    """What a layer held just before an operation: what the operation's events are derived from."""

    __slots__ = ("seq_length", "stored_tokens", "quantized_tokens", "residual_tokens", "bytes")

    def __init__(self, seq_length=0, stored_tokens=0, quantized_tokens=0, residual_tokens=0, nbytes=0):
        self.seq_length = seq_length
        self.stored_tokens = stored_tokens
        self.quantized_tokens = quantized_tokens
        self.residual_tokens = residual_tokens
        self.bytes = nbytes


EMPTY = Before()


class CacheTracer:
    """Per cache object: its layers' memory tiers (for O(1) totals) and what the sink was told."""

    def __init__(self, emit, facts, layers, on_host):
        self.emit = emit          # emit(kind, layer, fields): stamps the step
        self.facts = facts
        self.on_host = on_host    # list of bool per layer index, shared with the offload wrappers
        self._ledger = []
        self._told = []
        self._totals = [0, 0, 0]
        self._totals_emitted = (0, 0, 0)  # a new session's reader starts from zero totals
        for index, layer in enumerate(layers):
            self._account(index, layer, self.is_on_host(index))

    def is_on_host(self, index: int) -> bool:
        return index < len(self.on_host) and self.on_host[index]

    def probe(self, layer) -> Before:
        facts = self.facts
        kind = facts.kind(layer)
        seq = facts.seq_length(layer, kind)
        before = Before(seq, facts.stored_tokens(layer, kind, seq), 0, 0, facts.stored_bytes(layer, kind))
        if kind == ev.QUANTIZED:
            before.residual_tokens, before.quantized_tokens = facts.quantized_split(layer)
        return before

    def emit_update(self, index, layer, before, tokens_in, new_bytes, returned_tokens, flush_error):
        """Update, then WindowSlide when a sliding layer evicted, then QuantizeFlush when it flushed."""
        facts = self.facts
        kind = facts.kind(layer)
        seq = facts.seq_length(layer, kind)
        stored = facts.stored_tokens(layer, kind, seq)
        nbytes = facts.stored_bytes(layer, kind)
        self.emit(ev.UPDATE, index, (tokens_in, seq, stored, facts.capacity(layer, kind), returned_tokens, nbytes,
                                     kind))
        if kind in ev.SLIDING_KINDS:
            evicted = before.stored_tokens + tokens_in - stored
            if evicted > 0:
                self.emit(ev.WINDOW_SLIDE, index, (evicted, seq - stored, seq, facts.window_size(layer, kind)))
        if flush_error is not None:
            residual_after, quantized_after = facts.quantized_split(layer)
            moved, max_abs, mean_abs, relative = flush_error
            self.emit(ev.QUANTIZE_FLUSH, index, (moved, before.residual_tokens + tokens_in, residual_after,
                                                 quantized_after, before.bytes + new_bytes, nbytes, max_abs,
                                                 mean_abs, relative))

    def emit_state_update(self, index, layer):
        """A pure linear-attention layer's recurrent update: no tokens, its kind and bytes."""
        kind = self.facts.kind(layer)
        self.emit(ev.UPDATE, index, (0, 0, 0, 0, 0, self.facts.stored_bytes(layer, kind), kind))
        self.report_memory(index, layer, False, AFTER_UPDATE)

    def emit_crop(self, index, layer, before, max_length):
        """Crop; for a quantized layer whose re-quantization left other counts than the Crop rule
        implies, a QuantizeFlush with the real counts (errors 0: a crop does not measure them)."""
        facts = self.facts
        if not facts.is_attention(layer):
            return
        kind = facts.kind(layer)
        seq_after = facts.seq_length(layer, kind)
        self.emit(ev.CROP, index, (max_length, before.seq_length, seq_after))
        if kind in ev.SLIDING_KINDS:
            # A layer recording its past (speculative decoding) held more than its window until this crop,
            # which trims it back: what the crop's lengths do not account for slid out of the window now.
            implied = max(0, before.stored_tokens - max(0, before.seq_length - seq_after))
            stored = facts.stored_tokens(layer, kind, seq_after)
            if implied > stored:
                self.emit(ev.WINDOW_SLIDE, index, (implied - stored, seq_after - stored, seq_after,
                                                   facts.window_size(layer, kind)))
        if kind != ev.QUANTIZED:
            return
        residual_after, quantized_after = facts.quantized_split(layer)
        implied = min(before.quantized_tokens, seq_after)
        if quantized_after == implied and residual_after == seq_after - implied:
            return
        moved = max(0, quantized_after - min(before.quantized_tokens, quantized_after))
        self.emit(ev.QUANTIZE_FLUSH, index, (moved, before.residual_tokens, residual_after, quantized_after,
                                             before.bytes, facts.stored_bytes(layer, kind), 0.0, 0.0, 0.0))

    def _account(self, index, layer, on_host):
        """Recomputes the layer's tiers for its residency and keeps them for the totals."""
        facts = self.facts
        kind = facts.kind(layer)
        if kind == ev.QUANTIZED:
            quantized = facts.quantized_bytes(layer)
            full = facts.kv_bytes(layer)
        else:
            quantized = 0
            full = facts.stored_bytes(layer, kind)
        host = 0
        if on_host:
            moved = facts.transfer_bytes(layer, kind)
            full, quantized, host = full + quantized - moved, 0, moved
        memory = (full, quantized, host)
        while len(self._ledger) <= index:
            self._ledger.append((0, 0, 0))
        previous = self._ledger[index]
        totals = self._totals
        totals[0] += full - previous[0]
        totals[1] += quantized - previous[1]
        totals[2] += host - previous[2]
        self._ledger[index] = memory
        return memory

    def _set_told(self, index, memory):
        while len(self._told) <= index:
            self._told.append((0, 0, 0))
        self._told[index] = memory

    def report_memory(self, index, layer, on_host, after):
        """Emits the layer's Memory unless the event just emitted already implies exactly it."""
        memory = self._account(index, layer, on_host)
        known = self._told[index] if index < len(self._told) else (0, 0, 0)
        kind = self.facts.kind(layer)
        if after == AFTER_UPDATE:
            implied = (self.facts.stored_bytes(layer, kind) - known[1], known[1], known[2])
        elif after == AFTER_OFFLOAD:
            implied = (0, 0, self.facts.transfer_bytes(layer, kind))
        else:
            implied = (self.facts.transfer_bytes(layer, kind), 0, 0)
        if memory != implied:
            self.emit(ev.MEMORY, index, memory)
        self._set_told(index, memory)

    def emit_memory(self, index, layer, on_host):
        memory = self._account(index, layer, on_host)
        self.emit(ev.MEMORY, index, memory)
        self._set_told(index, memory)

    def emit_all_memory(self, layers):
        for index, layer in enumerate(layers):
            self.emit_memory(index, layer, self.is_on_host(index))
        self.emit_totals_if_changed()

    def emit_totals_if_changed(self):
        totals = tuple(self._totals)
        if totals != self._totals_emitted:
            self.emit(ev.MEMORY, -1, totals)
            self._totals_emitted = totals
