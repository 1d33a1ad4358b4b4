// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <span>

namespace kvscope::trace {

// CRC-32C (Castagnoli), the checksum of every session chunk and of the header. Continue a running
// checksum by passing the previous result as `crc`.
class Crc32c {
public:
    /// The processor's CRC-32C instruction where it has one (SSE 4.2), else the tables below.
    static std::uint32_t compute(std::span<const std::uint8_t> bytes, std::uint32_t crc = 0);
    /// The same by tables (slicing by 8), on any processor.
    static std::uint32_t computeByTables(std::span<const std::uint8_t> bytes, std::uint32_t crc = 0);
};

} // namespace kvscope::trace
