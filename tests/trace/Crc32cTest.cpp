// SPDX-License-Identifier: GPL-3.0-or-later
#include "Crc32c.h"

#include <gtest/gtest.h>

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
