// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "ChunkFrame.h"

#include <cstdint>
#include <span>
#include <vector>

struct ZSTD_DCtx_s;

namespace kvscope::trace {

class FileBytes;

// A chunk's raw payload handed to a reader piece by piece, read from the file and decompressed as the reader asks, so
// that a long session's overview (tens of MB raw) is decoded holding a few MB of it.
class PayloadStream {
public:
    // The payload of `frame` (its header read, its checksum not yet) at `offset` of `file`: read in slices and
    // decompressed as asked; finish() checks the checksum over the bytes read. ChunkFrame::Invalid for unknown
    // flags or an uncompressed payload whose lengths disagree.
    PayloadStream(const FileBytes& file, std::uint64_t offset, const ChunkFrame& frame);
    ~PayloadStream();
    PayloadStream(const PayloadStream&) = delete;
    PayloadStream& operator=(const PayloadStream&) = delete;

    // The next `count` bytes, or fewer where the payload ends sooner, left in place for skip(); valid until the next
    // call. ChunkFrame::Invalid when the stored bytes do not decompress or make more than the header says.
    std::span<const std::uint8_t> peek(std::size_t count);
    // Moves past `count` bytes of the last peek.
    void skip(std::size_t count);
    // Raw bytes the header promises beyond those skipped.
    std::uint64_t remaining() const { return m_remaining; }
    // ChunkFrame::Invalid unless the stored bytes made exactly the header's raw bytes and their checksum matches.
    void finish();

private:
    // Reads the next slice of stored bytes into m_input, adding them to the checksum; false at their end.
    bool readStored();
    // Makes `count` bytes past m_begin available, or all that are left.
    void fill(std::size_t count);

    std::uint64_t m_remaining = 0;
    const FileBytes* m_file = nullptr;
    ChunkFrame m_frame;
    bool m_compressed = false;
    std::uint64_t m_storedAt = 0;  // file offset of the next stored byte to read
    std::uint64_t m_storedEnd = 0; // one past the last stored byte
    std::uint64_t m_produced = 0;  // raw bytes made so far
    std::uint32_t m_crc = 0;
    ZSTD_DCtx_s* m_stream = nullptr;
    bool m_frameEnded = false; // zstd said its frame is complete
    std::vector<std::uint8_t> m_input;
    std::size_t m_inputAt = 0;
    std::vector<std::uint8_t> m_buffer; // raw bytes [m_begin, m_end) made and not yet skipped
    std::size_t m_begin = 0;
    std::size_t m_end = 0;
};

} // namespace kvscope::trace
