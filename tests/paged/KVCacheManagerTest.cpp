// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/paged/KVCacheManager.h"

#include "PagedTestHelpers.h"
#include "kvscope/paged/BlockHash.h"
#include "kvscope/paged/Request.h"

#include <gtest/gtest.h>

using namespace kvscope::paged;
using namespace kvscope::paged::testing;

namespace {

PagedConfig small(bool prefixCaching) {
    PagedConfig config;
    config.blockSize = 4;
    config.numBlocks = 4;
    config.prefixCaching = prefixCaching;
    return config;
}

} // namespace

TEST(KVCacheManagerTest, HashesEveryFullBlockOnceWithTheSaltOnTheFirst) {
    KVCacheManager manager(small(true));
    Request request = makeRequest("r", 0, tokens(1, 9), 4, true, "s");
    manager.updateBlockHashes(request);
    ASSERT_EQ(request.blockHashes.size(), 2u);
    const std::vector<TokenId> first{1, 2, 3, 4};
    const std::vector<TokenId> second{5, 6, 7, 8};
    EXPECT_EQ(request.blockHashes[0], BlockHash::of(BlockHash::kNoneHash, first, "s"));
    EXPECT_EQ(request.blockHashes[1], BlockHash::of(request.blockHashes[0], second));
    request.outputIds = {10, 11, 12};
    manager.updateBlockHashes(request);
    EXPECT_EQ(request.blockHashes.size(), 3u); // outputs complete the third block
}

TEST(KVCacheManagerTest, FailedAllocationChangesNothing) {
    KVCacheManager manager(small(true));
    Request request = makeRequest("r", 0, tokens(1, 20), 1);
    EXPECT_FALSE(manager.allocateSlots(request, 20));
    EXPECT_EQ(manager.pool().numFreeBlocks(), 4);
    EXPECT_TRUE(manager.blockTable("r", 0).empty());
    EXPECT_TRUE(manager.allocateSlots(request, 16));
    EXPECT_EQ(manager.blockTable("r", 0), (std::vector<BlockId>{0, 1, 2, 3}));
    EXPECT_EQ(manager.pool().numFreeBlocks(), 0);
}

TEST(KVCacheManagerTest, LooksUpNothingWithoutPrefixCaching) {
    KVCacheManager manager(small(false));
    Request first = makeRequest("a", 0, tokens(1, 8), 1);
    ASSERT_TRUE(manager.allocateSlots(first, 8));
    EXPECT_FALSE(manager.pool().block(0).hash.has_value()); // nothing is cached either
    Request second = makeRequest("b", 0, tokens(1, 8), 1);
    EXPECT_EQ(manager.computedBlocks(second).numTokens, 0);
}

TEST(KVCacheManagerTest, HitIsTheLongestRunOfCachedBlocks) {
    PagedConfig config = small(true);
    config.numBlocks = 8;
    KVCacheManager manager(config);
    Request first = makeRequest("a", 0, tokens(1, 12), 1);
    ASSERT_TRUE(manager.allocateSlots(first, 12));
    first.numComputedTokens = 12;
    // Same first 8 tokens, then different: 2 blocks hit; the lookup changes nothing.
    Request second = makeRequest("b", 0, concat(tokens(1, 8), tokens(50, 6)), 1);
    const ComputedBlocks hit = manager.computedBlocks(second);
    EXPECT_EQ(hit.numTokens, 8);
    EXPECT_EQ(hit.perGroup[0], (std::vector<BlockId>{0, 1}));
    EXPECT_EQ(manager.pool().block(0).refCnt, 1);
    ASSERT_TRUE(manager.allocateSlots(second, 6, hit));
    EXPECT_EQ(manager.pool().block(0).refCnt, 2);
    EXPECT_EQ(manager.blockTable("b", 0), (std::vector<BlockId>{0, 1, 3, 4}));
    manager.free(second);
    EXPECT_EQ(manager.pool().block(0).refCnt, 1);
    EXPECT_TRUE(manager.blockTable("b", 0).empty());
}
