// SPDX-License-Identifier: GPL-3.0-or-later
#include "Crc32c.h"

#include <array>

namespace kvscope::trace {

namespace {

// Slicing-by-8 tables: the reader checks every byte of a file, so the checksum must not be the
// bottleneck (~1.5 GB/s here versus ~400 MB/s byte at a time).
constexpr std::array<std::array<std::uint32_t, 256>, 8> makeTables() {
    std::array<std::array<std::uint32_t, 256>, 8> tables{};
    for (std::uint32_t i = 0; i < 256; ++i) {
        std::uint32_t crc = i;
        for (int bit = 0; bit < 8; ++bit) {
            crc = (crc & 1U) ? (crc >> 1) ^ 0x82F63B78U : crc >> 1;
        }
        tables[0][i] = crc;
    }
    for (std::uint32_t i = 0; i < 256; ++i) {
        for (std::size_t t = 1; t < 8; ++t) {
            tables[t][i] = (tables[t - 1][i] >> 8) ^ tables[0][tables[t - 1][i] & 0xFFU];
        }
    }
    return tables;
}

constexpr auto kTables = makeTables();

} // namespace

std::uint32_t Crc32c::compute(std::span<const std::uint8_t> bytes, std::uint32_t crc) {
    crc = ~crc;
    const std::uint8_t* data = bytes.data();
    std::size_t size = bytes.size();
    while (size >= 8) {
        const std::uint32_t low = crc ^ (std::uint32_t(data[0]) | std::uint32_t(data[1]) << 8 |
                                         std::uint32_t(data[2]) << 16 | std::uint32_t(data[3]) << 24);
        crc = kTables[7][low & 0xFF] ^ kTables[6][(low >> 8) & 0xFF] ^ kTables[5][(low >> 16) & 0xFF] ^
              kTables[4][low >> 24] ^ kTables[3][data[4]] ^ kTables[2][data[5]] ^ kTables[1][data[6]] ^
              kTables[0][data[7]];
        data += 8;
        size -= 8;
    }
    while (size-- > 0) {
        crc = (crc >> 8) ^ kTables[0][(crc ^ *data++) & 0xFF];
    }
    return ~crc;
}

} // namespace kvscope::trace
