// SPDX-License-Identifier: GPL-3.0-or-later
#include "Crc32c.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string_view>
#include <vector>

using kvscope::trace::Crc32c;

namespace {
std::uint32_t crcOf(std::string_view text, std::uint32_t crc = 0) {
    return Crc32c::compute({reinterpret_cast<const std::uint8_t*>(text.data()), text.size()}, crc);
}
} // namespace

TEST(Crc32cTest, MatchesPublishedCheckValues) {
    EXPECT_EQ(crcOf("123456789"), 0xE3069283U); // the CRC-32C check value (RFC 3720)
    EXPECT_EQ(crcOf(""), 0U);
    const std::vector<std::uint8_t> zeros(32, 0);
    EXPECT_EQ(Crc32c::compute(zeros), 0x8A9136AAU); // RFC 3720 B.4: 32 bytes of zeros
    const std::vector<std::uint8_t> ones(32, 0xFF);
    EXPECT_EQ(Crc32c::compute(ones), 0x62A8AB43U);
}

TEST(Crc32cTest, ContinuesARunningChecksumAcrossPieces) {
    const std::string_view text = "kvscope session chunk, checked byte by byte";
    for (std::size_t split = 0; split <= text.size(); ++split) {
        EXPECT_EQ(crcOf(text.substr(split), crcOf(text.substr(0, split))), crcOf(text)) << split;
    }
}

TEST(Crc32cTest, InstructionAndTablesAgreeWithTheBitwiseDefinition) {
    // The bit-by-bit definition (reflected polynomial 0x82F63B78) as the oracle, over every length up to 300
    // at every alignment, continuing from a nonzero checksum: the processor's instruction (where it has one)
    // and the tables must both give it.
    const auto bitwise = [](const std::uint8_t* data, std::size_t size, std::uint32_t crc) {
        crc = ~crc;
        for (std::size_t i = 0; i < size; ++i) {
            crc ^= data[i];
            for (int bit = 0; bit < 8; ++bit) {
                crc = (crc >> 1) ^ (0x82F63B78U & (0U - (crc & 1U)));
            }
        }
        return ~crc;
    };
    std::mt19937 random(41);
    std::vector<std::uint8_t> bytes(320);
    for (auto& byte : bytes) {
        byte = static_cast<std::uint8_t>(random());
    }
    for (std::size_t offset = 0; offset < 8; ++offset) {
        for (std::size_t size = 0; size <= 300; ++size) {
            const std::span<const std::uint8_t> piece(bytes.data() + offset, size);
            const std::uint32_t expected = bitwise(piece.data(), size, 0x1234567U);
            ASSERT_EQ(Crc32c::compute(piece, 0x1234567U), expected) << offset << " " << size;
            ASSERT_EQ(Crc32c::computeByTables(piece, 0x1234567U), expected) << offset << " " << size;
        }
    }
}
