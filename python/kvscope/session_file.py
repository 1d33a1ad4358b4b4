# SPDX-License-Identifier: GPL-3.0-or-later
"""Writes a `.kvsess` file step by step, byte for byte as sessions/FORMAT.md specifies.

Mirrors engine/trace/src/SessionWriter.cpp so that `kvscope-cli info | replay | export` and the
GUI read a Python recording like any session: the header is written and flushed first, each step
is one zstd chunk (level 3) written and handed to the operating system when its `step_end` arrives,
a Snapshot precedes the first chunk of every 256th step, and `finish()` appends the Index chunk
and the footer. A crash or kill loses at most the step in flight: everything before it is on disk.
"""

import json
import os
import struct

import zstandard

from . import events as ev
from .checksum import crc32c
from .reducer import StepState

MAGIC = b"KVSESS\0\0"
END_MAGIC = b"KVEND\0\0\0"
MAJOR, MINOR = 1, 0
# The minor a session needs for what it holds: 1.4 brought the paged-serving events (kinds 16-27).
PAGED_MINOR = 4
CHUNK_STEP, CHUNK_SNAPSHOT, CHUNK_INDEX = 1, 2, 3
FLAG_ZSTD = 1
SNAPSHOT_INTERVAL = 256
ZSTD_LEVEL = 3  # what the C++ writer uses: more costs more per step than it saves on disk
_FIXED_HEADER = struct.Struct("<8sHHIIqI")
_CHUNK_HEADER = struct.Struct("<IHHQQ")


class SessionFile:
    """One session file being written. `emit` files events under their step; not thread-safe.

    `minor`: the format minor written in the header, the lowest one that has every kind the caller emits
    (a Transformers recording needs 1.0, a paged one PAGED_MINOR). `snapshots`: False for a serving session,
    whose pool the snapshot layout cannot hold: a reader seeking to a step from a snapshot would lose the pool,
    and without snapshots it folds the steps from the first."""

    def __init__(self, path, metadata: dict, minor: int = MINOR, snapshots: bool = True):
        self.path = os.fspath(path)
        self._snapshots_wanted = snapshots
        json_text = json.dumps(metadata, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "replace")
        header = bytearray(_FIXED_HEADER.pack(MAGIC, MAJOR, minor, _FIXED_HEADER.size + len(json_text) + 4, 0,
                                              int(metadata.get("created_unix_ns", 0)), len(json_text)))
        header += json_text
        header += struct.pack("<I", crc32c(bytes(header)))
        self._file = open(self.path, "wb")
        self._offset = 0
        self._compressor = zstandard.ZstdCompressor(level=ZSTD_LEVEL)
        self._write(bytes(header))
        self._file.flush()
        self._pending = []          # events of the step being filled, in emission order
        self._pending_step = -1
        self._last_filed_step = -1
        self._steps_since_snapshot = 0
        self._unfolded = []         # events since the state was last folded (for snapshots)
        self._state = StepState()
        self._step_chunks = []      # (step, offset) of every Step chunk
        self._snapshots = []        # (step, offset) of every Snapshot chunk
        self._sequence = 0
        self.finished = False

    def emit(self, event: tuple) -> None:
        """Files an event: an event older than the newest step belongs to the newest step."""
        if self.finished:
            raise RuntimeError("session file %s is already finished; no more events can be added" % self.path)
        step = max(event[1], self._pending_step, self._last_filed_step, 0)
        if step > self._pending_step and self._pending:
            self._flush_step()
        if step > self._last_filed_step:
            # Snapshots only at a step boundary, once the previous step can get no more events.
            if (self._snapshots_wanted and self._last_filed_step >= 0
                    and self._steps_since_snapshot >= SNAPSHOT_INTERVAL):
                self._write_snapshot()
            self._unfolded.append((self._last_filed_step + 1, step))
            self._last_filed_step = step
            self._steps_since_snapshot += 1
        self._pending_step = step
        self._pending.append((event, self._sequence))
        self._sequence += 1
        self._unfolded.append(event)
        if event[0] == ev.STEP_END:
            self._flush_step()

    def flush_step(self) -> None:
        """Writes the buffered events of the current step now."""
        self._flush_step()

    def _flush_step(self) -> None:
        if not self._pending or self._file is None:
            return
        raw = bytearray(struct.pack("<qI", self._pending_step, len(self._pending)))
        for event, sequence in self._pending:
            ev.encode_event(raw, event, sequence)
        self._step_chunks.append((self._pending_step, self._offset))
        self._write_chunk(CHUNK_STEP, bytes(raw))
        self._file.flush()
        self._pending = []

    def _fold(self) -> None:
        for item in self._unfolded:
            if len(item) == 2:  # steps opened: (first, last)
                for opened in range(item[0], item[1] + 1):
                    self._state.begin_step(opened)
            else:
                self._state.apply(item)
        self._unfolded = []

    def _write_snapshot(self) -> None:
        self._fold()
        self._snapshots.append((self._state.step, self._offset))
        self._write_chunk(CHUNK_SNAPSHOT, self._state.encode())
        self._steps_since_snapshot = 0

    def finish(self) -> None:
        """Writes the last step, the Index chunk and the footer, and closes the file."""
        if self.finished or self._file is None:
            return
        self._flush_step()
        raw = bytearray()
        for positions in (self._step_chunks, self._snapshots):
            raw += struct.pack("<I", len(positions))
            for step, offset in positions:
                raw += struct.pack("<qQ", step, offset)
        index_offset = self._offset
        self._write_chunk(CHUNK_INDEX, bytes(raw))
        self._write(struct.pack("<Q", index_offset) + END_MAGIC)
        self.finished = True
        self._file.close()
        self._file = None

    def close_unfinished(self) -> None:
        """Closes the file without a footer (what a crash leaves): readers keep the intact steps."""
        if self._file is not None:
            self._flush_step()
            self._file.close()
            self._file = None

    def _write_chunk(self, chunk_type: int, raw: bytes) -> None:
        stored = self._compressor.compress(raw)
        flags = FLAG_ZSTD
        if len(stored) >= len(raw):
            stored, flags = raw, 0  # incompressible: stored as is
        frame = _CHUNK_HEADER.pack(chunk_type, 1, flags, len(stored), len(raw)) + stored
        self._write(frame + struct.pack("<I", crc32c(frame)))

    def _write(self, data: bytes) -> None:
        self._file.write(data)
        self._offset += len(data)
