// SPDX-License-Identifier: GPL-3.0-or-later
// MergeTable (a BPE model's pair -> merge table) against std::unordered_map on the same additions: pairs given
// twice keep their first merge, absent pairs are absent, and the table grows through many sizes.
#include "MergeTable.h"

#include <gtest/gtest.h>

#include <random>
#include <unordered_map>

namespace {

using kvscope::tokenizer::MergeTable;

TEST(MergeTableTest, FindsWhatAMapFindsAndKeepsTheFirstMergeOfAPair) {
    MergeTable table;
    std::unordered_map<std::uint64_t, MergeTable::Merge> map;
    std::mt19937 random(9);
    // Ids dense and small as real vocabularies' are, so pairs collide in their low bits.
    std::uniform_int_distribution<std::uint32_t> id(0, 700);
    for (std::uint32_t rank = 0; rank < 100000; ++rank) {
        const std::uint32_t left = id(random);
        const std::uint32_t right = id(random);
        const MergeTable::Merge merge{rank, id(random)};
        table.add(left, right, merge);
        map.try_emplace((std::uint64_t{left} << 32) | right, merge);
    }
    ASSERT_EQ(table.size(), map.size());
    for (std::uint32_t left = 0; left <= 700; ++left) {
        for (std::uint32_t right = 0; right <= 700; right += 3) {
            const auto it = map.find((std::uint64_t{left} << 32) | right);
            const MergeTable::Merge* found = table.find(left, right);
            ASSERT_EQ(found != nullptr, it != map.end()) << left << " " << right;
            if (found != nullptr) {
                EXPECT_EQ(found->rank, it->second.rank);
                EXPECT_EQ(found->mergedId, it->second.mergedId);
            }
        }
    }
}

TEST(MergeTableTest, AnEmptyTableFindsNothingAndLargeIdsKeepTheirPairs) {
    MergeTable table;
    EXPECT_EQ(table.find(0, 0), nullptr);
    table.add(0xffffff, 0, {1, 2});
    table.add(0, 0xffffff, {3, 4});
    ASSERT_NE(table.find(0xffffff, 0), nullptr);
    EXPECT_EQ(table.find(0xffffff, 0)->rank, 1u);
    EXPECT_EQ(table.find(0, 0xffffff)->mergedId, 4u);
    EXPECT_EQ(table.find(0xffffff, 0xffffff), nullptr);
}

} // namespace
