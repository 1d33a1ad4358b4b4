// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/trace/PagedStateReducer.h"

#include "TraceTestHelpers.h"

#include <gtest/gtest.h>

using namespace kvscope::trace;
using kvscope::trace::testing::makeEvent;

namespace {

PagedState fold(std::vector<EventPayload> payloads) {
    PagedState state;
    for (auto& payload : payloads)
        PagedStateReducer::apply(state, makeEvent(0, -1, std::move(payload)));
    return state;
}

PagedPoolEvent pool(std::int32_t blocks, std::int32_t nullBlock = -1,
                    std::vector<std::int64_t> windows = {0}) {
    PagedPoolEvent e;
    e.blockSize = 4;
    e.numBlocks = blocks;
    e.nullBlock = nullBlock;
    e.groupWindows = std::move(windows);
    return e;
}

} // namespace

TEST(PagedStateReducerTest, PoolStartsWithEveryBlockFreeButTheNullBlock) {
    EXPECT_EQ(fold({pool(4)}).freeQueue, (std::vector<std::int32_t>{0, 1, 2, 3}));
    const PagedState current = fold({pool(4, 0)});
    EXPECT_EQ(current.freeQueue, (std::vector<std::int32_t>{1, 2, 3}));
    EXPECT_EQ(current.blocks.size(), 4u);
    EXPECT_TRUE(current.active);
    EXPECT_FALSE(fold({RequestArrivedEvent{"r", 3, 1}}).active); // nothing before a pool
}

TEST(PagedStateReducerTest, AllocationHitsFreesAndEvictionsMoveBlocks) {
    const PagedState state = fold({
        pool(5),
        RequestArrivedEvent{"a", 6, 2},
        RequestAdmittedEvent{"a", 6, 0, false},
        BlockAllocatedEvent{"a", 0, 0, 0},
        BlockAllocatedEvent{"a", 0, 1, 1},
        BlockCachedEvent{"a", 0, 0, 0xabc, 0x1, 0, 4},
        RequestScheduledEvent{"a", 0, 6, true},
        RequestFinishedEvent{"a", FinishReason::MaxTokens, 2},
        BlockFreedEvent{"a", 0, 1, 1, 0, 3, false}, // to the tail: 2 3 4 1
        BlockFreedEvent{"a", 0, 0, 0, 0, 0, false}, // to the head: 0 2 3 4 1
        RequestArrivedEvent{"b", 5, 1},
        BlockTouchedEvent{"b", 0, 0, 0, 1},
        RequestAdmittedEvent{"b", 5, 4, false},
        BlockEvictedEvent{0, 2, 0x77},
        BlockAllocatedEvent{"b", 0, 2, 1},
    });
    EXPECT_EQ(state.freeQueue, (std::vector<std::int32_t>{3, 4, 1}));
    EXPECT_EQ(state.blocks[0].refCnt, 1);
    EXPECT_TRUE(state.blocks[0].cached);
    EXPECT_EQ(state.blocks[0].hash, 0xabcU);
    EXPECT_EQ(state.blocks[2].refCnt, 1);
    EXPECT_FALSE(state.blocks[2].cached);
    ASSERT_EQ(state.requests.size(), 2u);
    EXPECT_EQ(state.requests[0].phase, PagedRequestPhase::Finished);
    EXPECT_EQ(state.requests[0].blockTables[0], (std::vector<std::int32_t>{0, 1})); // kept as it finished
    EXPECT_EQ(state.requests[0].numComputedTokens, 6);
    EXPECT_EQ(state.requests[0].outputTokens, 2);
    EXPECT_EQ(state.requests[1].phase, PagedRequestPhase::Running);
    EXPECT_EQ(state.requests[1].blockTables[0], (std::vector<std::int32_t>{0, 2}));
    EXPECT_EQ(state.requests[1].cachedTokens, 4);
    EXPECT_EQ(state.evictions, 1);
    EXPECT_EQ(state.queryTokens, 11);
    EXPECT_EQ(state.hitTokens, 4);
}

TEST(PagedStateReducerTest, PreemptionClearsTablesAndWindowedFreesLeaveHoles) {
    const PagedState state = fold({
        pool(6, -1, {0, 8}),
        RequestArrivedEvent{"a", 12, 4},
        RequestAdmittedEvent{"a", 12, 0, false},
        BlockAllocatedEvent{"a", 0, 0, 0},
        BlockAllocatedEvent{"a", 1, 1, 0},
        BlockAllocatedEvent{"a", 1, 2, 1},
        BlockFreedEvent{"a", 1, 1, 0, 0, 3, true},
        RequestArrivedEvent{"b", 3, 4},
        RequestPreemptedEvent{"b", 0},
    });
    EXPECT_EQ(state.requests[0].blockTables[1], (std::vector<std::int32_t>{-1, 2}));
    EXPECT_EQ(state.freeQueue, (std::vector<std::int32_t>{3, 4, 5, 1}));
    EXPECT_EQ(state.requests[1].phase, PagedRequestPhase::Preempted);
    EXPECT_EQ(state.requests[1].preemptions, 1);
    EXPECT_EQ(state.preemptions, 1);
    EXPECT_EQ(state.requests[1].blockTables, (std::vector<std::vector<std::int32_t>>{{}, {}}));
}
