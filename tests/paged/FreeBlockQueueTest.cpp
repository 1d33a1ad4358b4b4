// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/paged/FreeBlockQueue.h"

#include <gtest/gtest.h>

using namespace kvscope::paged;

namespace {

std::vector<KVCacheBlock> blocks(int count) {
    std::vector<KVCacheBlock> result(static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i)
        result[static_cast<std::size_t>(i)].id = i;
    return result;
}

} // namespace

TEST(FreeBlockQueueTest, StartsInIdOrderAndPopsTheHead) {
    auto pool = blocks(4);
    FreeBlockQueue queue(pool);
    EXPECT_EQ(queue.toVector(), (std::vector<BlockId>{0, 1, 2, 3}));
    EXPECT_EQ(queue.popFront(), 0);
    EXPECT_EQ(queue.popFront(), 1);
    EXPECT_EQ(queue.size(), 2);
    EXPECT_FALSE(pool[0].inFreeQueue);
    EXPECT_TRUE(pool[2].inFreeQueue);
}

TEST(FreeBlockQueueTest, RemovesFromAnywhereAndInsertsAtBothEnds) {
    auto pool = blocks(6);
    FreeBlockQueue queue(pool);
    queue.remove(3); // middle
    queue.remove(0); // head
    queue.remove(5); // tail
    EXPECT_EQ(queue.toVector(), (std::vector<BlockId>{1, 2, 4}));
    EXPECT_EQ(queue.front(), 1);
    EXPECT_EQ(queue.back(), 4);
    EXPECT_EQ(queue.pushBack(5), 3);
    queue.insertAfter(kNoBlock, 3); // head
    queue.insertAfter(3, 0);        // after the new head: a prepend of [3, 0]
    EXPECT_EQ(queue.toVector(), (std::vector<BlockId>{3, 0, 1, 2, 4, 5}));
    EXPECT_EQ(queue.size(), 6);
    while (!queue.empty())
        queue.popFront();
    EXPECT_EQ(queue.front(), kNoBlock);
    EXPECT_EQ(queue.back(), kNoBlock);
    queue.pushBack(2);
    EXPECT_EQ(queue.toVector(), (std::vector<BlockId>{2}));
}
