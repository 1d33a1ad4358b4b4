// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/paged/LayerGroupManager.h"

#include "PagedTestHelpers.h"
#include "kvscope/paged/InvariantChecker.h"
#include "kvscope/paged/Scheduler.h"

#include <gtest/gtest.h>

using namespace kvscope::paged;
using namespace kvscope::paged::testing;

namespace {

using Table = std::vector<BlockId>;

/// A hybrid model: group 0 full attention, group 1 a sliding window of 8 tokens; blocks of 4, a prefill
/// chunked 4 tokens per step.
PagedConfig hybrid(FreePolicy policy) {
    PagedConfig config;
    config.blockSize = 4;
    config.numBlocks = 16;
    config.freePolicy = policy;
    config.maxNumBatchedTokens = 4;
    config.groups = {LayerGroup{GroupKind::Full, 0, {0, 2}}, LayerGroup{GroupKind::Sliding, 8, {1, 3}}};
    return config;
}

} // namespace

TEST(LayerGroupManagerTest, SlidingGroupFreesBlocksWhollyOutOfTheWindow) {
    Scheduler scheduler(hybrid(FreePolicy::Document));
    scheduler.addRequest(makeRequest("r", 0, tokens(100, 20), 1));
    const BlockId hole = kNoBlock;
    // Per step: the full group's table, the sliding group's table. Both draw from one pool, full first.
    // A block leaves the window once all its tokens are before numComputed - 8 + 1 (the previous step's).
    const std::vector<std::pair<Table, Table>> expected{
        {{0}, {1}},
        {{0, 2}, {1, 3}},
        {{0, 2, 4}, {1, 3, 5}},
        {{0, 2, 4, 6}, {hole, 3, 5, 7}}, // computed 12 before: tokens 0..3 are out of [5, 12]
        {{0, 2, 4, 6, 8}, {hole, hole, 5, 7, 9}},
    };
    for (std::size_t s = 0; s < expected.size(); ++s) {
        const SchedulerOutput out = step(scheduler);
        ASSERT_EQ(out.requests.size(), 1u);
        EXPECT_EQ(out.requests[0].blockTables[0], expected[s].first) << "step " << s;
        EXPECT_EQ(out.requests[0].blockTables[1], expected[s].second) << "step " << s;
        const auto problems = InvariantChecker::check(scheduler);
        EXPECT_TRUE(problems.empty()) << problems.front();
        if (s == 3) {
            // the dropped sliding block went to the free queue's tail, still cached
            EXPECT_EQ(scheduler.cacheManager().pool().freeQueue().back(), 1);
            EXPECT_TRUE(scheduler.cacheManager().pool().block(1).hash.has_value());
        }
    }
    EXPECT_FALSE(scheduler.hasUnfinishedRequests());
}

TEST(LayerGroupManagerTest, CurrentPolicyHolesAreTheNullBlock) {
    Scheduler scheduler(hybrid(FreePolicy::Current));
    scheduler.addRequest(makeRequest("r", 0, tokens(100, 20), 1));
    SchedulerOutput out;
    for (int s = 0; s < 5; ++s)
        out = step(scheduler);
    EXPECT_EQ(out.requests[0].blockTables[0], (Table{1, 3, 5, 7, 9}));
    EXPECT_EQ(out.requests[0].blockTables[1], (Table{0, 0, 6, 8, 10}));
}

TEST(LayerGroupManagerTest, HybridPrefixHitNeedsTheLastWindowInTheSlidingGroup) {
    Scheduler scheduler(hybrid(FreePolicy::Document));
    scheduler.addRequest(makeRequest("r", 0, tokens(100, 20), 1));
    scheduler.addRequest(makeRequest("s", 5, tokens(100, 20), 1));
    for (int s = 0; s < 5; ++s)
        step(scheduler);
    // Full attention holds 4 cached blocks (16 of the 19 tokens that may hit); the sliding group needs the
    // ceil(7 / 4) = 2 blocks before position 16 cached, 5 and 7, and gets holes before them.
    const SchedulerOutput out = step(scheduler);
    ASSERT_EQ(out.requests.size(), 1u);
    EXPECT_EQ(out.requests[0].cachedTokens, 16);
    EXPECT_EQ(out.requests[0].firstPosition, 16);
    EXPECT_EQ(out.requests[0].blockTables[0], (Table{0, 2, 4, 6, 10}));
    EXPECT_EQ(out.requests[0].blockTables[1], (Table{kNoBlock, kNoBlock, 5, 7, 11}));
    const auto problems = InvariantChecker::check(scheduler);
    EXPECT_TRUE(problems.empty()) << problems.front();
}

TEST(LayerGroupManagerTest, SlidingHitSearchesFromTheRight) {
    BlockPool pool(8, true, FreePolicy::Document, 1);
    LayerGroupManager group(0, LayerGroup{GroupKind::Sliding, 9, {}}, 4, pool); // needs ceil(8/4) = 2 blocks
    const auto ids = pool.allocate(5, "x", 0, 0);
    const std::vector<HashValue> hashes{10, 11, 12, 13, 14};
    pool.cache(ids[0], 10, 0, "x", 0, 0, 4);
    pool.cache(ids[2], 12, 11, "x", 0, 8, 12);
    pool.cache(ids[3], 13, 12, "x", 0, 12, 16);
    // Blocks 2 and 3 cached in a row: a hit of 16 tokens, blocks 0 and 1 as holes.
    EXPECT_EQ(group.findLongestCacheHit(hashes, 20), (Table{kNoBlock, kNoBlock, ids[2], ids[3]}));
    // Within 12 tokens only block 2 of the run is in reach, and no run of 2: only a run at the start counts,
    // and block 0 alone is one.
    EXPECT_EQ(group.findLongestCacheHit(hashes, 12), (Table{ids[0]}));
}
