// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/paged/BlockPool.h"

#include <gtest/gtest.h>

using namespace kvscope::paged;

TEST(BlockPoolTest, AllocatesFromTheHeadAndEvictsACachedBlock) {
    BlockPool pool(4, true, FreePolicy::Document, 1);
    EXPECT_EQ(pool.nullBlock(), kNoBlock);
    const auto ids = pool.allocate(2, "r", 0, 0);
    EXPECT_EQ(ids, (std::vector<BlockId>{0, 1}));
    pool.cache(0, 42, 7, "r", 0, 0, 4);
    EXPECT_EQ(pool.cachedBlock(42, 0), std::optional<BlockId>(0));
    const BlockPool::Release releases[]{{1, 1}, {0, 0}};
    pool.freeBlocks(releases, "r", 0, false);
    EXPECT_EQ(pool.freeQueue().toVector(), (std::vector<BlockId>{2, 3, 1, 0}));
    EXPECT_EQ(pool.cachedBlock(42, 0), std::optional<BlockId>(0)); // free but still cached
    pool.allocate(3, "s", 0, 0);
    EXPECT_EQ(pool.evictions(), 0);
    pool.allocate(1, "s", 0, 3); // pops block 0: its hash goes
    EXPECT_EQ(pool.evictions(), 1);
    EXPECT_FALSE(pool.cachedBlock(42, 0).has_value());
    EXPECT_FALSE(pool.block(0).hash.has_value());
}

TEST(BlockPoolTest, TouchTakesAFreeBlockOffTheQueueAndCounts) {
    BlockPool pool(3, true, FreePolicy::Document, 1);
    pool.allocate(1, "a", 0, 0);
    pool.cache(0, 9, 1, "a", 0, 0, 4);
    const BlockPool::Release release[]{{0, 0}};
    pool.freeBlocks(release, "a", 0, false);
    pool.touch(0, "b", 0, 0);
    pool.touch(0, "c", 0, 0);
    EXPECT_EQ(pool.block(0).refCnt, 2);
    EXPECT_EQ(pool.freeQueue().toVector(), (std::vector<BlockId>{1, 2}));
    pool.freeBlocks(release, "b", 0, false);
    EXPECT_EQ(pool.block(0).refCnt, 1);
    EXPECT_EQ(pool.numFreeBlocks(), 2);
    EXPECT_EQ(pool.numUsedBlocks(), 1);
}

TEST(BlockPoolTest, CurrentPolicyReservesTheNullBlockAndSplitsFreedBlocks) {
    BlockPool pool(6, true, FreePolicy::Current, 1);
    EXPECT_EQ(pool.nullBlock(), 0);
    EXPECT_EQ(pool.freeQueue().toVector(), (std::vector<BlockId>{1, 2, 3, 4, 5}));
    pool.allocate(4, "r", 0, 0); // 1 2 3 4
    pool.cache(1, 11, 0, "r", 0, 0, 2);
    pool.cache(2, 12, 11, "r", 0, 2, 4);
    // Freed last block first: 4 3 (no hash) to the head in that order, 2 1 (cached) to the tail.
    const BlockPool::Release releases[]{{4, 3}, {3, 2}, {2, 1}, {1, 0}};
    pool.freeBlocks(releases, "r", 0, false);
    EXPECT_EQ(pool.freeQueue().toVector(), (std::vector<BlockId>{4, 3, 5, 2, 1}));
    EXPECT_EQ(pool.numUsedBlocks(), 0);
}

TEST(BlockPoolTest, DuplicateHashesAreKeptPerBlockAndPerGroup) {
    BlockPool pool(4, true, FreePolicy::Document, 2);
    pool.allocate(3, "r", 0, 0);
    pool.cache(0, 5, 1, "r", 0, 0, 4);
    pool.cache(1, 5, 1, "s", 0, 0, 4); // the same tokens computed twice (append-only tables)
    pool.cache(2, 5, 1, "r", 1, 0, 4);
    EXPECT_EQ(pool.cachedBlocks(5, 0).size(), 2u);
    EXPECT_EQ(pool.cachedBlock(5, 0), std::optional<BlockId>(0)); // the first cached
    EXPECT_EQ(pool.cachedBlock(5, 1), std::optional<BlockId>(2));
    EXPECT_EQ(pool.numCachedEntries(0), 2u);
}
