# SPDX-License-Identifier: GPL-3.0-or-later
"""The session file's event kinds and their byte encoding (sessions/FORMAT.md, "Events").

An event is kept as a plain tuple `(kind, step, layer, fields)` until its step's chunk is written:
cheap to build on the hot path of a model's forward, and the fold for snapshots
(`kvscope.reducer`) reads the same fields. The numbers and field orders are those of
engine/trace/include/kvscope/trace/Event.h and EventCodec.cpp; a reader refuses anything else.
"""

import struct

UPDATE = 0
MASK_SIZES = 1
WINDOW_SLIDE = 2
QUANTIZE_FLUSH = 3
TRANSFER = 4
CROP = 5
REORDER = 6
BATCH_REPEAT = 7
BATCH_SELECT = 8
RESET = 9
MEMORY = 10
STEP_BEGIN = 11
STEP_END = 12
COMPUTE = 13
LOGITS = 14
# Paged serving (format 1.4; docs/paged.md): step-level (layer -1) events of a block pool and its requests.
PAGED_POOL = 16
REQUEST_ARRIVED = 17
REQUEST_ADMITTED = 18
REQUEST_SCHEDULED = 19
REQUEST_PREEMPTED = 20
REQUEST_FINISHED = 21
BLOCK_ALLOCATED = 22
BLOCK_TOUCHED = 23
BLOCK_CACHED = 24
BLOCK_FREED = 25
BLOCK_EVICTED = 26
REQUEST_TOKENS = 27
# Annotations (kinds 128 and up) describe the recording, not the cache: no reader folds them into the
# state, and readers that do not know them skip them by their length (sessions/FORMAT.md).
LOST = 128

# Layer kinds of the update event (trace::LayerKind).
DYNAMIC = 0
DYNAMIC_SLIDING_WINDOW = 1
STATIC = 2
STATIC_SLIDING_WINDOW = 3
QUANTIZED = 4
LINEAR_ATTENTION = 5
LINEAR_ATTENTION_AND_FULL_ATTENTION = 6
SLIDING_KINDS = (DYNAMIC_SLIDING_WINDOW, STATIC_SLIDING_WINDOW)

# Transfer directions, lanes and timing sources.
OFFLOAD, PREFETCH = 0, 1
LANE_COMPUTE, LANE_PREFETCH = 0, 1
MEASURED, MODELED = 0, 1

# Why a request finished (trace::FinishReason); free policies of the pool (0 the design document's, 1 vLLM's code).
FINISH_EOS, FINISH_MAX_TOKENS, FINISH_MAX_MODEL_LEN = 0, 1, 2
FREE_POLICY_DOCUMENT, FREE_POLICY_CURRENT = 0, 1

# Logits: the whole vocabulary up to this size, else the top ones (trace::kLogits*).
LOGITS_FULL_VOCABULARY_LIMIT = 1024
LOGITS_TOP_COUNT = 256

_HEAD = struct.Struct("<BI")
_BODY_HEAD = struct.Struct("<qiQ")
_FIXED = {
    UPDATE: struct.Struct("<qqqqqqB"),
    MASK_SIZES: struct.Struct("<qqq"),
    WINDOW_SLIDE: struct.Struct("<qqqq"),
    QUANTIZE_FLUSH: struct.Struct("<qqqqqqddd"),
    TRANSFER: struct.Struct("<BBBqqq"),
    CROP: struct.Struct("<qqq"),
    BATCH_REPEAT: struct.Struct("<qqq"),
    MEMORY: struct.Struct("<qqq"),
    COMPUTE: struct.Struct("<Bqq"),
}

# The paged kinds' fields in wire order, as engine/trace/src/EventFields.h lists them: a struct code per
# fixed-width field (q i64, i i32, Q u64 hash, B u8 enum or bool), "s" a u32-prefixed UTF-8 string, "L" a
# u32-prefixed list of i64. The fields tuple of such an event holds one value per letter.
_PAGED_LAYOUTS = {
    PAGED_POOL: "qiiBBLqi",     # blockSize numBlocks nullBlock prefixCaching freePolicy groupWindows
                                #   maxNumBatchedTokens maxNumSeqs
    REQUEST_ARRIVED: "sqq",     # requestId promptTokens maxTokens
    REQUEST_ADMITTED: "sqqB",   # requestId numTokens cachedTokens resumed
    REQUEST_SCHEDULED: "sqqB",  # requestId firstPosition numTokens samples
    REQUEST_PREEMPTED: "sq",    # requestId numComputedTokens
    REQUEST_FINISHED: "sBq",    # requestId reason outputTokens
    BLOCK_ALLOCATED: "siii",    # requestId group block tableIndex
    BLOCK_TOUCHED: "siiii",     # requestId group block tableIndex refCnt
    BLOCK_CACHED: "siiQQqq",    # requestId group block hash parentHash tokenBegin tokenEnd
    BLOCK_FREED: "siiiiiB",     # requestId group block tableIndex refCnt queuePosition windowed
    BLOCK_EVICTED: "iiQ",       # group block hash
    REQUEST_TOKENS: "sqLsL",    # requestId firstPosition tokenIds text pieceEnds
}


def _encode_layout(kind: int, layout: str, fields: tuple) -> bytes:
    if len(fields) != len(layout):
        raise ValueError("event kind %d takes %d fields (%s), got %d" % (kind, len(layout), layout, len(fields)))
    out = bytearray()
    for code, value in zip(layout, fields):
        if code == "s":
            out += _string(value)
        elif code == "L":
            out += _int64_list(value)
        elif code == "B":
            out += struct.pack("<B", int(value))  # bools as 0 or 1, as the reader requires
        else:
            out += struct.pack("<" + code, value)
    return bytes(out)


def _int64_list(values) -> bytes:
    return struct.pack("<I%dq" % len(values), len(values), *values)


def _string(text: str) -> bytes:
    data = text.encode("utf-8", errors="replace")
    return struct.pack("<I", len(data)) + data


def encode_payload(kind: int, fields: tuple) -> bytes:
    """The payload bytes of one event, fields in the order of FORMAT.md's table."""
    fixed = _FIXED.get(kind)
    if fixed is not None:
        return fixed.pack(*fields)
    if kind == REORDER:
        return _int64_list(fields[0])
    if kind == BATCH_SELECT:
        return _int64_list(fields[0]) + struct.pack("<qq", fields[1], fields[2])
    if kind == RESET:
        return b""
    if kind == STEP_BEGIN:
        return struct.pack("<q", fields[0]) + _string(fields[1])
    if kind == STEP_END:
        return struct.pack("<q", fields[0]) + _string(fields[1]) + struct.pack("<q", fields[2])
    if kind == LOST:
        return _string(fields[0]) + _string(fields[1])
    if kind == LOGITS:
        ids, log_probs, complete = fields
        return (_int64_list(ids) + struct.pack("<I%df" % len(log_probs), len(log_probs), *log_probs)
                + struct.pack("<B", 1 if complete else 0))
    layout = _PAGED_LAYOUTS.get(kind)
    if layout is not None:
        return _encode_layout(kind, layout, fields)
    raise ValueError("unknown event kind %r" % (kind,))


def encode_event(out: bytearray, event: tuple, sequence: int) -> None:
    """Appends `u8 kind | u32 bodyLength | i64 step | i32 layer | u64 sequence | payload`."""
    kind, step, layer, fields = event
    body = _BODY_HEAD.pack(step, layer, sequence) + encode_payload(kind, fields)
    out += _HEAD.pack(kind, len(body))
    out += body
