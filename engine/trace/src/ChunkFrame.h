// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <vector>

struct ZSTD_DCtx_s;

namespace kvscope::trace {

// One chunk frame of a session file (sessions/FORMAT.md, "Chunks"): header, stored payload, CRC-32C. The
// one place frames are checked and decompressed, so that SessionReader (which reports damage) and
// SessionOverviewFile (which leaves a file that does not check to the pass) apply the same checks and limits.
class ChunkFrame {
public:
    // What is wrong with a frame, in the words the reader reports (it adds the byte).
    struct Invalid : std::runtime_error {
        using std::runtime_error::runtime_error;
    };

    // The frame whose header starts `bytes` (at least its header), with `available` bytes from its first
    // byte to where it must end: Invalid when the header is cut short or the frame does not fit.
    static ChunkFrame header(std::span<const std::uint8_t> bytes, std::uint64_t available);

    std::uint32_t type() const { return m_type; }
    std::uint64_t rawBytes() const { return m_rawBytes; }
    std::uint64_t storedBytes() const { return m_storedBytes; }
    // Whether the stored payload is one zstd frame; Invalid for flags this reader does not know.
    bool compressed() const;
    // Invalid when the raw length cannot be the stored payload's: an uncompressed payload of another length, or
    // more than the reader's limits allow a compressed one to make.
    void checkLengths() const;
    // Header, stored payload and checksum.
    std::uint64_t frameBytes() const;

    // Invalid unless the checksum at the end of `frame` (the frame's frameBytes() bytes) matches.
    void checkSum(std::span<const std::uint8_t> frame) const;
    // The checked `frame`'s payload into `raw`, decompressed (with `context` when not null) within the
    // reader's limits: Invalid for unknown flags, a length that does not match, or a payload that does not
    // decompress.
    void payload(std::span<const std::uint8_t> frame, std::vector<std::uint8_t>& raw,
                 ZSTD_DCtx_s* context) const;

private:
    std::uint32_t m_type = 0;
    std::uint16_t m_flags = 0;
    std::uint64_t m_storedBytes = 0;
    std::uint64_t m_rawBytes = 0;
};

} // namespace kvscope::trace
