#!/usr/bin/env python3
"""Derives the deliberately damaged session files from the golden file (sessions/FORMAT.md).

Run from this folder after regenerating golden-1.0.kvsess (needs the `zstd` command):
    python3 make_damaged.py
expected.json says what kvscope must report for each file; tests/cli/SessionFilesTest.cpp checks it.
"""
import json
import struct
import subprocess

CHUNK_HEADER = 24
FOOTER = 16
STEP, SNAPSHOT, INDEX = 1, 2, 3


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def payload_of(chunk):
    _, _, flags, stored, _ = struct.unpack_from("<IHHQQ", chunk, 0)
    payload = chunk[CHUNK_HEADER:CHUNK_HEADER + stored]
    if flags & 1:
        payload = subprocess.run(["zstd", "-d", "-c"], input=payload, capture_output=True, check=True).stdout
    return payload


def chunks(data):
    """(type, frame bytes) of every chunk between the header and the index."""
    offset = struct.unpack_from("<I", data, 12)[0]
    index_offset = struct.unpack_from("<Q", data, len(data) - FOOTER)[0]
    found = []
    while offset < index_offset:
        chunk_type, _, _, stored, _ = struct.unpack_from("<IHHQQ", data, offset)
        size = CHUNK_HEADER + stored + 4
        found.append((chunk_type, data[offset:offset + size]))
        offset += size
    return found


def frame(chunk_type, payload):
    head = struct.pack("<IHHQQ", chunk_type, 1, 0, len(payload), len(payload))
    return head + payload + struct.pack("<I", crc32c(head + payload))


def main():
    golden = open("golden-1.0.kvsess", "rb").read()
    header_length = struct.unpack_from("<I", golden, 12)[0]
    index_offset = struct.unpack_from("<Q", golden, len(golden) - FOOTER)[0]
    found = chunks(golden)
    step_offsets = []
    offset = header_length
    for chunk_type, data in found:
        if chunk_type == STEP:
            step_offsets.append(offset)
        offset += len(data)
    steps = len({struct.unpack_from("<q", payload_of(d), 0)[0] for t, d in found if t == STEP})
    expected = {}

    def write(name, data, **expectation):
        open(name, "wb").write(data)
        expected[name] = expectation

    write("damaged-truncated.kvsess", golden[:step_offsets[2] + CHUNK_HEADER + 7],
          exit=2, intact_steps=2, message="does not fit")
    flipped = bytearray(golden)
    flipped[step_offsets[3] + CHUNK_HEADER + 5] ^= 0x04
    write("damaged-bitflip.kvsess", bytes(flipped), exit=2, intact_steps=3, message="checksum")
    write("damaged-unfinished.kvsess", golden[:index_offset], exit=2, intact_steps=steps, message="not finished")
    footer = bytearray(golden)
    footer[-3] ^= 0xFF
    write("damaged-footer.kvsess", bytes(footer), exit=2, intact_steps=steps, message="footer")
    major = bytearray(golden)
    struct.pack_into("<H", major, 8, 2)
    write("refused-major-2.kvsess", bytes(major), exit=2, message="2.0")
    header = bytearray(golden)
    header[40] ^= 0x01
    write("refused-header-checksum.kvsess", bytes(header), exit=2, message="checksum")
    write("refused-not-a-session.kvsess", b'{"traceEvents": []}\n', exit=2, message="not a kvscope session file")

    # A file of a newer minor (1.99): an unknown chunk type before the first step, and a last step
    # chunk whose first event has a kind this reader does not know. Both are skipped; the file is whole.
    out = bytearray(golden[:header_length])
    struct.pack_into("<H", out, 10, 99)
    struct.pack_into("<I", out, header_length - 4, crc32c(bytes(out[:header_length - 4])))
    out += frame(77, b"a chunk type from the future")
    entries = {STEP: [], SNAPSHOT: []}
    for chunk_type, data in found:
        if chunk_type in entries:
            entries[chunk_type].append((struct.unpack_from("<q", payload_of(data), 0)[0], len(out)))
        out += data
    last = max(step for step, _ in entries[STEP]) + 1
    unknown = struct.pack("<qiQ", last, -1, 1) + b"future payload"
    reset = struct.pack("<qiQ", last, -1, 2)
    events = struct.pack("<BI", 200, len(unknown)) + unknown + struct.pack("<BI", 9, len(reset)) + reset
    entries[STEP].append((last, len(out)))
    out += frame(STEP, struct.pack("<qI", last, 2) + events)
    index = b"".join(struct.pack("<I", len(entries[kind])) + b"".join(struct.pack("<qQ", s, o) for s, o in entries[kind])
                     for kind in (STEP, SNAPSHOT))
    new_index_offset = len(out)
    out += frame(INDEX, index) + struct.pack("<Q", new_index_offset) + b"KVEND\0\0\0"
    write("future-minor-1.99.kvsess", bytes(out), exit=0, intact_steps=steps + 1, skipped_chunks=1, message="")

    with open("expected.json", "w") as handle:
        json.dump(expected, handle, indent=2, sort_keys=True)
        handle.write("\n")


if __name__ == "__main__":
    main()
