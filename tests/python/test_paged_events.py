# SPDX-License-Identifier: GPL-3.0-or-later
"""The Python encoder of the paged-serving events (kinds 16-27, what kvscope.record_vllm writes) against the C++
writer's bytes: every paged event of the 1.4 golden session (tests/data/sessions/golden-1.4.kvsess, written by
kvscope's scheduler: windowed frees, two layer groups, preemption, evictions) is decoded here by FORMAT.md's table,
encoded again by kvscope.events, and must give the same bytes; the Python writer's file of those events must
replay in kvscope-cli to the golden's state at every step."""

import json
import os
import struct

import zstandard

from kvscope import events as ev
from kvscope.session_file import PAGED_MINOR, SessionFile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GOLDEN = os.path.join(ROOT, "tests", "data", "sessions", "golden-1.4.kvsess")

# sessions/FORMAT.md's paged table, transcribed apart from kvscope.events so that the two are checked against
# each other: i64 fields unless noted, string = u32 length + bytes, list = u32 count + i64 each, ids i32,
# hashes u64, enums and bools u8.
FORMAT_TABLE = {
    16: ["i64", "i32", "i32", "u8", "u8", "list", "i64", "i32"],
    17: ["string", "i64", "i64"],
    18: ["string", "i64", "i64", "u8"],
    19: ["string", "i64", "i64", "u8"],
    20: ["string", "i64"],
    21: ["string", "u8", "i64"],
    22: ["string", "i32", "i32", "i32"],
    23: ["string", "i32", "i32", "i32", "i32"],
    24: ["string", "i32", "i32", "u64", "u64", "i64", "i64"],
    25: ["string", "i32", "i32", "i32", "i32", "i32", "u8"],
    26: ["i32", "i32", "u64"],
    27: ["string", "i64", "list", "string", "list"],
}
_SCALARS = {"i64": "<q", "i32": "<i", "u64": "<Q", "u8": "<B"}


def decode_fields(kind, payload):
    """The payload's fields by FORMAT.md; every byte must be taken."""
    fields, at = [], 0
    for field in FORMAT_TABLE[kind]:
        if field == "string":
            (n,) = struct.unpack_from("<I", payload, at)
            fields.append(payload[at + 4:at + 4 + n].decode("utf-8"))
            at += 4 + n
        elif field == "list":
            (n,) = struct.unpack_from("<I", payload, at)
            fields.append(list(struct.unpack_from("<%dq" % n, payload, at + 4)))
            at += 4 + 8 * n
        else:
            (value,) = struct.unpack_from(_SCALARS[field], payload, at)
            fields.append(value)
            at += struct.calcsize(_SCALARS[field])
    assert at == len(payload), "kind %d: FORMAT.md's fields take %d of %d bytes" % (kind, at, len(payload))
    return tuple(fields)


def read_session(path):
    """(metadata, [(kind, step, layer, payload bytes)]) of every Step chunk of a finished session."""
    data = open(path, "rb").read()
    magic, major, minor, header_length, _flags, _created, meta_length = struct.unpack_from("<8sHHIIqI", data, 0)
    assert magic == b"KVSESS\0\0" and (major, minor) == (1, 4)
    metadata = json.loads(data[32:32 + meta_length])
    events, at = [], header_length
    end = len(data) - 16  # the footer: index offset and end magic
    while at < end:
        chunk_type, _version, flags, stored, raw = struct.unpack_from("<IHHQQ", data, at)
        payload = data[at + 24:at + 24 + stored]
        at += 24 + stored + 4
        if chunk_type != 1:
            continue
        if flags & 1:
            payload = zstandard.ZstdDecompressor().decompress(payload, max_output_size=raw)
        _step, count = struct.unpack_from("<qI", payload, 0)
        offset = 12
        for _ in range(count):
            kind, length = struct.unpack_from("<BI", payload, offset)
            step, layer, _sequence = struct.unpack_from("<qiQ", payload, offset + 5)
            events.append((kind, step, layer, payload[offset + 5 + 20:offset + 5 + length]))
            offset += 5 + length
    return metadata, events


def test_paged_events_encode_as_the_cpp_writer_does():
    _, events = read_session(GOLDEN)
    kinds = set()
    for kind, _step, _layer, payload in events:
        if kind not in FORMAT_TABLE:
            continue
        fields = decode_fields(kind, payload)
        assert ev.encode_payload(kind, fields) == payload, "kind %d: %s" % (kind, fields)
        kinds.add(kind)
    assert kinds == set(FORMAT_TABLE), "the golden lacks kinds %s" % sorted(set(FORMAT_TABLE) - kinds)


def test_a_python_written_serving_session_replays_as_the_golden(cli, tmp_path):
    metadata, events = read_session(GOLDEN)
    path = tmp_path / "rewritten.kvsess"
    session = SessionFile(path, metadata, minor=PAGED_MINOR)
    for kind, step, layer, payload in events:
        assert kind in FORMAT_TABLE, "the golden holds kind %d, which this test does not decode" % kind
        session.emit((kind, step, layer, decode_fields(kind, payload)))
    session.finish()
    code, ours, err = cli("replay", path, "--all-steps")
    assert code == 0, err
    code, golden, err = cli("replay", GOLDEN, "--all-steps")
    assert code == 0, err
    assert len(ours) == len(golden) == 12
    for mine, theirs in zip(ours, golden):
        mine.pop("file")
        theirs.pop("file")
        assert mine == theirs
    code, info, err = cli("info", path)
    assert code == 0, err
    assert info["format_version"] == "1.4" and info["complete"] is True
    code, golden_info, _ = cli("info", GOLDEN)
    assert info["event_counts"] == golden_info["event_counts"]


def test_a_paged_event_with_the_wrong_number_of_fields_is_refused():
    try:
        ev.encode_payload(ev.BLOCK_ALLOCATED, ("r0", 0, 3))
    except ValueError as error:
        assert "takes 4 fields" in str(error)
    else:
        raise AssertionError("three fields of four were encoded")



def test_a_long_serving_session_seeks_to_any_step(cli, tmp_path):
    """Without snapshots (whose layout has no pool), `replay --step K` past step 255 folds the pool from the start."""
    path = tmp_path / "long.kvsess"
    session = SessionFile(path, {"cache": "paged"}, minor=PAGED_MINOR, snapshots=False)
    session.emit((ev.PAGED_POOL, 0, -1, (4, 8, 0, True, ev.FREE_POLICY_CURRENT, [0], 64, 4)))
    session.emit((ev.REQUEST_ARRIVED, 0, -1, ("r0", 4, 1000)))
    for step in range(300):
        session.emit((ev.STEP_BEGIN, step, -1, (-1, "")))
        if step % 4 == 0:
            session.emit((ev.BLOCK_ALLOCATED, step, -1, ("r0", 0, 1 + step // 4 % 7, step // 4)))
        session.emit((ev.STEP_END, step, -1, (-1, "", 0)))
    session.finish()
    code, every, err = cli("replay", path, "--all-steps")
    assert code == 0, err
    for step in (255, 256, 299):
        code, state, err = cli("replay", path, "--step", step)
        assert code == 0, err
        assert state["paged"] == every[step]["paged"]
