// SPDX-License-Identifier: GPL-3.0-or-later
// ServingSummary: a serving session's numbers read from its events, against literal values worked from the
// design document's example and against the scheduler's own counts (SchedulerStats, an independent oracle).
#include "kvscope/gui/models/ServingSummary.h"

#include "GuiTestHelpers.h"
#include "PagedTestSessions.h"
#include "kvscope/paged/WorkloadCatalog.h"
#include "kvscope/trace/Timeline.h"

namespace kvscope::gui {
namespace {

ServingSummary summaryOf(const std::vector<trace::Event>& events, std::int64_t lastStep = -1) {
    trace::Timeline timeline;
    timeline.emitAll(events);
    PagedHistory history;
    history.extend(timeline);
    return ServingSummary::of(history, lastStep);
}

TEST(ServingSummaryTest, TheDesignDocumentsExample) {
    const ServingSummary summary = summaryOf(testing::designExample());
    EXPECT_EQ(summary.steps, 6);
    EXPECT_TRUE(summary.finished);
    EXPECT_EQ(summary.requests, 3);
    EXPECT_EQ(summary.queryTokens, 58) << "15 + 14 + 29 prompt tokens looked up";
    EXPECT_EQ(summary.hitTokens, 20) << "r1 8, r2 12";
    EXPECT_DOUBLE_EQ(summary.prefixHitRate(), 20.0 / 58.0);
    EXPECT_EQ(summary.evictions, 1) << "block 3";
    EXPECT_EQ(summary.preemptions, 0);
    EXPECT_EQ(summary.peakBlocksUsed, 8)
        << "r2's table [0, 1, 2, 7, 8, 9, 4, 3] at step 5, freed as it finishes";
    EXPECT_EQ(summary.numBlocks, 10);
    // Up to step 3: r0 alone, finished at step 3, 5 blocks at most.
    const ServingSummary early = summaryOf(testing::designExample(), 3);
    EXPECT_EQ(early.steps, 4);
    EXPECT_EQ(early.requests, 1);
    EXPECT_TRUE(early.finished);
    EXPECT_EQ(early.queryTokens, 15);
    EXPECT_EQ(early.hitTokens, 0);
    EXPECT_EQ(early.peakBlocksUsed, 5);
    // Up to step 2: r0 still decoding.
    EXPECT_FALSE(summaryOf(testing::designExample(), 2).finished);
    EXPECT_EQ(ServingSummary::of(PagedHistory{}).steps, 0) << "not a serving session";
}

// The same numbers as the scheduler's own statistics, for the example, a preemption and a built-in chat.
TEST(ServingSummaryTest, AgreesWithTheSchedulersStatistics) {
    struct Case {
        const char* what;
        paged::PagedConfig config;
        std::vector<paged::Request> requests;
    };
    paged::PagedConfig small = testing::exampleConfig();
    small.numBlocks = 4;
    paged::PagedConfig chat;
    chat.blockSize = 16;
    chat.numBlocks = 24;
    const std::vector<Case> cases = {
        {"example",
         testing::exampleConfig(),
         {testing::request("r0", 0, testing::ids(100, 15), 4),
          testing::request("r1", 4, testing::join(testing::ids(100, 10), testing::ids(200, 4)), 1),
          testing::request("r2", 5, testing::join(testing::ids(100, 12), testing::ids(300, 17)), 1)}},
        {"preemption",
         small,
         {testing::request("r0", 0, testing::ids(100, 4), 8),
          testing::request("r1", 0, testing::ids(200, 4), 8)}},
        {"shared prefix, short pool",
         chat,
         {testing::request("a", 0, testing::ids(100, 70), 20),
          testing::request("b", 1, testing::ids(100, 75), 20),
          testing::request("c", 2, testing::join(testing::ids(100, 64), testing::ids(400, 20)), 20),
          testing::request("d", 3, testing::ids(100, 90), 20)}},
    };
    for (const Case& c : cases) {
        trace::RecordingSink sink;
        trace::EventEmitter emitter(&sink);
        paged::Scheduler scheduler(c.config, &emitter);
        for (const paged::Request& r : c.requests) {
            scheduler.addRequest(r);
        }
        while (scheduler.hasUnfinishedRequests()) {
            const paged::SchedulerOutput output = scheduler.schedule();
            std::vector<paged::TokenId> sampled;
            for (const auto& scheduled : output.requests) {
                sampled.push_back(5000 + scheduler.request(scheduled.requestId).numTokens());
            }
            scheduler.update(output, sampled, -1);
        }
        const paged::SchedulerStats stats = scheduler.stats();
        const ServingSummary summary = summaryOf(sink.events());
        EXPECT_EQ(summary.steps, scheduler.step()) << c.what;
        EXPECT_TRUE(summary.finished) << c.what;
        EXPECT_EQ(summary.queryTokens, stats.queryTokens) << c.what;
        EXPECT_EQ(summary.hitTokens, stats.hitTokens) << c.what;
        EXPECT_EQ(summary.evictions, stats.evictions) << c.what;
        EXPECT_EQ(summary.preemptions, stats.preemptions) << c.what;
        EXPECT_EQ(summary.peakBlocksUsed, stats.peakBlocksUsed) << c.what;
    }
    EXPECT_GT(summaryOf(testing::preemption()).preemptions, 0);
}

TEST(ServingSummaryTest, DescribesThePool) {
    trace::PagedPoolEvent pool;
    pool.blockSize = 4;
    pool.numBlocks = 10;
    pool.prefixCaching = false;
    pool.freePolicy = 1;
    pool.maxNumBatchedTokens = 8;
    pool.maxNumSeqs = 2;
    EXPECT_EQ(
        ServingSummary::describePool(pool),
        "10 blocks of 4 tokens, prefix caching off, budget 8 tokens, 2 running at most, free policy current");
}

} // namespace
} // namespace kvscope::gui
