// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/paged/BlockHash.h"

#include <gtest/gtest.h>
#include <vector>

using namespace kvscope::paged;

// Literal values from an independent Python transcription of the documented function (FNV-1a 64 over the
// little-endian fields, then splitmix64): the hash is stable across runs and machines.
TEST(BlockHashTest, MatchesTheDocumentedFunction) {
    EXPECT_EQ(BlockHash::kNoneHash, 0x1b0afb11ab707a55ULL);
    const std::vector<TokenId> first{1, 2, 3, 4};
    const std::vector<TokenId> second{5, 6, 7, 8};
    const HashValue a = BlockHash::of(BlockHash::kNoneHash, first);
    EXPECT_EQ(a, 0x111559138957fe84ULL);
    EXPECT_EQ(BlockHash::of(a, second), 0x9b7c569333191b77ULL);
    EXPECT_EQ(BlockHash::of(BlockHash::kNoneHash, first, "salt"), 0x1bc2e5a8fa78f1a5ULL);
}

TEST(BlockHashTest, DependsOnParentTokensOrderAndExtraKey) {
    const std::vector<TokenId> tokens{1, 2, 3, 4};
    const std::vector<TokenId> swapped{2, 1, 3, 4};
    const HashValue base = BlockHash::of(BlockHash::kNoneHash, tokens);
    EXPECT_NE(base, BlockHash::of(BlockHash::kNoneHash, swapped));
    EXPECT_NE(base, BlockHash::of(base, tokens));
    EXPECT_NE(base, BlockHash::of(BlockHash::kNoneHash, tokens, "x"));
    EXPECT_EQ(base, BlockHash::of(BlockHash::kNoneHash, tokens, ""));
}
