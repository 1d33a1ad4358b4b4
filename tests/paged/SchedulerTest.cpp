// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/paged/Scheduler.h"

#include "PagedTestHelpers.h"
#include "kvscope/paged/InvariantChecker.h"
#include "kvscope/paged/PagedError.h"

#include <gtest/gtest.h>

using namespace kvscope::paged;
using namespace kvscope::paged::testing;

namespace {

using Table = std::vector<BlockId>;

PagedConfig exampleConfig(FreePolicy policy) {
    PagedConfig config;
    config.blockSize = 4;
    config.numBlocks = 10;
    config.freePolicy = policy;
    config.maxNumBatchedTokens = 64;
    config.maxNumSeqs = 8;
    return config;
}

/// vLLM's prefix_caching.md example: r0 = 15 prompt tokens and 4 outputs; r1 = 14 tokens sharing the first
/// 10; r2 = 29 tokens sharing the first 12; run one after the other.
void addExample(Scheduler& scheduler, std::int64_t r1Arrival, std::int64_t r2Arrival) {
    scheduler.addRequest(makeRequest("r0", 0, tokens(100, 15), 4));
    scheduler.addRequest(makeRequest("r1", r1Arrival, concat(tokens(100, 10), tokens(200, 4)), 1));
    scheduler.addRequest(makeRequest("r2", r2Arrival, concat(tokens(100, 12), tokens(300, 17)), 1));
}

void expectInvariants(const Scheduler& scheduler) {
    const auto problems = InvariantChecker::check(scheduler);
    EXPECT_TRUE(problems.empty()) << "step " << scheduler.step() << ": " << problems.front();
}

} // namespace

TEST(SchedulerTest, DesignDocumentExampleUnderTheDocumentPolicy) {
    Scheduler scheduler(exampleConfig(FreePolicy::Document));
    addExample(scheduler, 4, 5);
    const auto& pool = scheduler.cacheManager().pool();

    // Time 1: four blocks, three of them full and cached at allocation.
    SchedulerOutput out = step(scheduler);
    ASSERT_EQ(out.requests.size(), 1u);
    EXPECT_EQ(out.requests[0].blockTables[0], (Table{0, 1, 2, 3}));
    EXPECT_EQ(out.requests[0].tokenIds.size(), 15u);
    EXPECT_TRUE(out.requests[0].samples);
    EXPECT_TRUE(pool.block(2).hash.has_value());
    EXPECT_FALSE(pool.block(3).hash.has_value());
    // Time 2-3: the first output fills block 3 (cached), the second needs block 4.
    out = step(scheduler);
    EXPECT_TRUE(pool.block(3).hash.has_value());
    EXPECT_EQ(out.requests[0].blockTables[0], (Table{0, 1, 2, 3}));
    out = step(scheduler);
    EXPECT_EQ(out.requests[0].blockTables[0], (Table{0, 1, 2, 3, 4}));
    out = step(scheduler); // r0's fourth output: it finishes, blocks to the tail in reverse
    EXPECT_EQ(scheduler.request("r0").finalBlockTables[0], (Table{0, 1, 2, 3, 4}));
    EXPECT_EQ(pool.freeQueue().toVector(), (Table{5, 6, 7, 8, 9, 4, 3, 2, 1, 0}));

    // Time 4: r1 hits blocks 0 and 1 (8 tokens): the third block matches 2 of 4 tokens only.
    out = step(scheduler);
    ASSERT_EQ(out.requests.size(), 1u);
    EXPECT_EQ(out.requests[0].requestId, "r1");
    EXPECT_EQ(out.requests[0].cachedTokens, 8);
    EXPECT_EQ(out.requests[0].firstPosition, 8);
    EXPECT_EQ(out.requests[0].blockTables[0], (Table{0, 1, 5, 6}));
    EXPECT_EQ(scheduler.request("r1").cachedTokens, 8);
    // Time 6: r1 finished; the queue the document shows before r2.
    EXPECT_EQ(pool.freeQueue().toVector(), (Table{7, 8, 9, 4, 3, 2, 6, 5, 1, 0}));

    // Time 7: r2 touches 0, 1, 2 (12 tokens) and gets 7 8 9 4 3, evicting block 3.
    const auto evictionsBefore = pool.evictions();
    out = step(scheduler);
    ASSERT_EQ(out.requests.size(), 1u);
    EXPECT_EQ(out.requests[0].blockTables[0], (Table{0, 1, 2, 7, 8, 9, 4, 3}));
    EXPECT_EQ(out.requests[0].cachedTokens, 12);
    EXPECT_EQ(pool.evictions() - evictionsBefore, 1);
    EXPECT_FALSE(scheduler.hasUnfinishedRequests());
    expectInvariants(scheduler);
}

TEST(SchedulerTest, DesignDocumentExampleWithRequestOneArrivingWhileRequestZeroRuns) {
    // The document's own timing: r1 comes in while r0 decodes (Time 4), r0 finishes first (Time 5).
    Scheduler scheduler(exampleConfig(FreePolicy::Document));
    addExample(scheduler, 3, 4);
    for (int i = 0; i < 3; ++i)
        step(scheduler);
    SchedulerOutput out = step(scheduler);
    ASSERT_EQ(out.requests.size(), 2u);
    EXPECT_EQ(out.requests[1].requestId, "r1");
    EXPECT_EQ(out.requests[1].blockTables[0], (Table{0, 1, 5, 6}));
    EXPECT_EQ(scheduler.cacheManager().pool().freeQueue().toVector(), (Table{7, 8, 9, 4, 3, 2, 6, 5, 1, 0}));
    out = step(scheduler);
    EXPECT_EQ(out.requests[0].blockTables[0], (Table{0, 1, 2, 7, 8, 9, 4, 3}));
}

TEST(SchedulerTest, DesignDocumentExampleUnderTheCurrentPolicy) {
    // vLLM's code today: block 0 is the null block, freed blocks without a hash go to the head.
    Scheduler scheduler(exampleConfig(FreePolicy::Current));
    addExample(scheduler, 4, 5);
    const auto& pool = scheduler.cacheManager().pool();
    EXPECT_EQ(pool.nullBlock(), 0);
    for (int i = 0; i < 4; ++i)
        step(scheduler);
    EXPECT_EQ(scheduler.request("r0").finalBlockTables[0], (Table{1, 2, 3, 4, 5}));
    // r0's unhashed block 5 went to the head, its cached blocks 4 3 2 1 to the tail.
    EXPECT_EQ(pool.freeQueue().toVector(), (Table{5, 6, 7, 8, 9, 4, 3, 2, 1}));
    SchedulerOutput out = step(scheduler);
    EXPECT_EQ(out.requests[0].blockTables[0], (Table{1, 2, 5, 6}));
    EXPECT_EQ(pool.freeQueue().toVector(), (Table{6, 7, 8, 9, 4, 3, 5, 2, 1}));
    const auto evictionsBefore = pool.evictions();
    out = step(scheduler);
    EXPECT_EQ(out.requests[0].blockTables[0], (Table{1, 2, 3, 6, 7, 8, 9, 4}));
    EXPECT_EQ(out.requests[0].cachedTokens, 12);
    EXPECT_EQ(pool.evictions() - evictionsBefore, 1);
    EXPECT_FALSE(pool.block(4).hash.has_value()); // block 4 (r0's tokens 12..15) was the one evicted
    expectInvariants(scheduler);
}

TEST(SchedulerTest, ChunkedPrefillBudgetAndMaxNumSeqs) {
    PagedConfig config;
    config.blockSize = 4;
    config.numBlocks = 20;
    config.prefixCaching = false;
    config.maxNumBatchedTokens = 6;
    config.maxNumSeqs = 2;
    Scheduler scheduler(config);
    scheduler.addRequest(makeRequest("r0", 0, tokens(10, 10), 2));
    scheduler.addRequest(makeRequest("r1", 0, tokens(30, 3), 2));
    scheduler.addRequest(makeRequest("r2", 0, tokens(50, 2), 1));

    struct Row {
        std::string id;
        std::int64_t firstPosition;
        std::size_t numTokens;
        bool samples;
        Table table;
    };
    const std::vector<std::vector<Row>> expected{
        // step 0: r0's first chunk takes the whole budget
        {{"r0", 0, 6, false, {0, 1}}},
        // step 1: r0's rest (4, samples), then r1's first 2 tokens with the 2 left
        {{"r0", 6, 4, true, {0, 1, 2}}, {"r1", 0, 2, false, {3}}},
        // step 2: both decode/finish their prompt; r2 waits: max_num_seqs 2
        {{"r0", 10, 1, true, {0, 1, 2}}, {"r1", 2, 1, true, {3}}},
        // step 3: r0 finished at step 2; r1 decodes, r2 admitted
        {{"r1", 3, 1, true, {3}}, {"r2", 0, 2, true, {4}}},
        {},
    };
    for (std::size_t s = 0; s < expected.size(); ++s) {
        const SchedulerOutput out = step(scheduler);
        ASSERT_EQ(out.requests.size(), expected[s].size()) << "step " << s;
        for (std::size_t i = 0; i < expected[s].size(); ++i) {
            const auto& row = expected[s][i];
            const auto& got = out.requests[i];
            EXPECT_EQ(got.requestId, row.id) << "step " << s;
            EXPECT_EQ(got.firstPosition, row.firstPosition) << "step " << s << " " << row.id;
            EXPECT_EQ(got.tokenIds.size(), row.numTokens) << "step " << s << " " << row.id;
            EXPECT_EQ(got.samples, row.samples) << "step " << s << " " << row.id;
            EXPECT_EQ(got.blockTables[0], row.table) << "step " << s << " " << row.id;
        }
        expectInvariants(scheduler);
    }
    EXPECT_EQ(scheduler.request("r0").finishedStep, 2);
    EXPECT_EQ(scheduler.request("r0").firstTokenStep, 1);
    EXPECT_EQ(scheduler.request("r2").finishedStep, 3);
    EXPECT_EQ(scheduler.request("r1").outputIds, (std::vector<TokenId>{5000 + 3, 5000 + 4}));
    EXPECT_FALSE(scheduler.hasUnfinishedRequests());
}

TEST(SchedulerTest, PreemptsTheLastRunningAdmitsNoOneThatStepAndResumesFromThePrefixCache) {
    PagedConfig config;
    config.blockSize = 4;
    config.numBlocks = 5;
    config.maxNumBatchedTokens = 64;
    Scheduler scheduler(config);
    scheduler.addRequest(makeRequest("rA", 0, tokens(100, 8), 2));
    scheduler.addRequest(makeRequest("rB", 0, tokens(200, 8), 4));
    scheduler.addRequest(makeRequest("rC", 1, tokens(300, 3), 1));

    SchedulerOutput out = step(scheduler);
    EXPECT_EQ(out.requests[0].blockTables[0], (Table{0, 1}));
    EXPECT_EQ(out.requests[1].blockTables[0], (Table{2, 3}));

    // Step 1: rA takes the last free block; rB finds none and preempts the last running request: itself.
    // Blocks 3 2 are free again, yet rC (arrived now, 1 block) is not admitted in a step that preempted.
    out = step(scheduler);
    ASSERT_EQ(out.requests.size(), 1u);
    EXPECT_EQ(out.requests[0].requestId, "rA");
    EXPECT_EQ(out.requests[0].blockTables[0], (Table{0, 1, 4}));
    EXPECT_EQ(out.preempted, (std::vector<std::string>{"rB"}));
    EXPECT_EQ(scheduler.request("rB").preemptions, 1);
    EXPECT_EQ(scheduler.request("rB").numComputedTokens, 0);
    EXPECT_EQ(scheduler.cacheManager().pool().freeQueue().toVector(), (Table{3, 2, 4, 1, 0}));
    EXPECT_EQ(scheduler.waiting().front()->id, "rB"); // back at the front, ahead of rC

    // Step 2: rB resumes with its prompt and first output (9 tokens): blocks 2 and 3 are still cached,
    // so only position 8 is recomputed; then rC.
    out = step(scheduler);
    ASSERT_EQ(out.requests.size(), 2u);
    EXPECT_EQ(out.requests[0].requestId, "rB");
    EXPECT_TRUE(out.requests[0].admitted);
    EXPECT_EQ(out.requests[0].cachedTokens, 8);
    EXPECT_EQ(out.requests[0].firstPosition, 8);
    EXPECT_EQ(out.requests[0].tokenIds, (std::vector<TokenId>{5008}));
    EXPECT_EQ(out.requests[0].blockTables[0], (Table{2, 3, 4}));
    EXPECT_EQ(out.requests[1].requestId, "rC");
    EXPECT_EQ(out.requests[1].blockTables[0], (Table{1}));
    EXPECT_EQ(scheduler.request("rB").cachedTokens, 0); // its first admission found nothing
    EXPECT_EQ(scheduler.stats().preemptions, 1);
    expectInvariants(scheduler);
    while (scheduler.hasUnfinishedRequests()) {
        step(scheduler);
        expectInvariants(scheduler);
    }
    EXPECT_EQ(scheduler.request("rB").outputIds.size(), 4u);
}

TEST(SchedulerTest, RunningRequestPreemptsTheLastOneNotItself) {
    PagedConfig config;
    config.blockSize = 4;
    config.numBlocks = 4;
    config.prefixCaching = false;
    Scheduler scheduler(config);
    scheduler.addRequest(makeRequest("rA", 0, tokens(100, 7), 10));
    scheduler.addRequest(makeRequest("rB", 0, tokens(200, 7), 10));
    step(scheduler); // rA [0 1], rB [2 3]
    step(scheduler); // both fill their second block
    // Step 2: rA needs a third block: rB (last) is preempted and rA takes its last block, 3.
    const SchedulerOutput out = step(scheduler);
    EXPECT_EQ(out.preempted, (std::vector<std::string>{"rB"}));
    ASSERT_EQ(out.requests.size(), 1u);
    EXPECT_EQ(out.requests[0].blockTables[0], (Table{0, 1, 3}));
    // rB needs 3 blocks for its 9 tokens, one is free: it waits (and preempts no one) until rA is done.
    while (scheduler.request("rA").state != RequestState::Finished) {
        const SchedulerOutput next = step(scheduler);
        EXPECT_TRUE(next.preempted.empty());
        EXPECT_EQ(find(next, "rB"), nullptr);
    }
    EXPECT_EQ(scheduler.request("rA").finalBlockTables[0], (Table{0, 1, 3, 2}));
    const SchedulerOutput resumed = step(scheduler);
    ASSERT_NE(find(resumed, "rB"), nullptr);
    EXPECT_EQ(find(resumed, "rB")->firstPosition, 0); // prefix caching off: everything is recomputed
    EXPECT_EQ(find(resumed, "rB")->tokenIds.size(), 9u);
    EXPECT_EQ(find(resumed, "rB")->blockTables[0], (Table{2, 3, 1}));
}

TEST(SchedulerTest, FullyCachedPromptRecomputesItsLastToken) {
    PagedConfig config;
    config.blockSize = 4;
    config.numBlocks = 8;
    Scheduler scheduler(config);
    scheduler.addRequest(makeRequest("a", 0, tokens(100, 8), 1));
    scheduler.addRequest(makeRequest("b", 1, tokens(100, 8), 1));
    step(scheduler);
    const SchedulerOutput out = step(scheduler);
    // Both blocks are cached, but at most 7 tokens may hit: the second block is recomputed.
    EXPECT_EQ(out.requests[0].cachedTokens, 4);
    EXPECT_EQ(out.requests[0].firstPosition, 4);
    EXPECT_EQ(out.requests[0].tokenIds.size(), 4u);
}

TEST(SchedulerTest, CacheSaltSeparatesPrefixes) {
    PagedConfig config;
    config.blockSize = 4;
    config.numBlocks = 16;
    Scheduler scheduler(config);
    scheduler.addRequest(makeRequest("a", 0, tokens(100, 9), 1, true, "tenant-1"));
    scheduler.addRequest(makeRequest("b", 1, tokens(100, 9), 1, true, "tenant-2"));
    scheduler.addRequest(makeRequest("c", 2, tokens(100, 9), 1, true, "tenant-1"));
    step(scheduler);
    EXPECT_EQ(step(scheduler).requests[0].cachedTokens, 0);
    EXPECT_EQ(step(scheduler).requests[0].cachedTokens, 8);
}

TEST(SchedulerTest, FinishesAtEosUnlessIgnored) {
    PagedConfig config;
    config.blockSize = 4;
    config.numBlocks = 8;
    Scheduler scheduler(config);
    scheduler.addRequest(makeRequest("stops", 0, tokens(1, 3), 10, false));
    scheduler.addRequest(makeRequest("ignores", 0, tokens(1, 3), 2, true));
    // The fake model samples 5000 + tokens held: 5003 after the prompt.
    step(scheduler, 5003);
    EXPECT_EQ(scheduler.request("stops").state, RequestState::Finished);
    EXPECT_EQ(scheduler.request("stops").outputIds, (std::vector<TokenId>{5003}));
    EXPECT_EQ(scheduler.request("ignores").state, RequestState::Running);
}

TEST(SchedulerTest, ArrivalStepsAndIdleSteps) {
    PagedConfig config;
    config.blockSize = 4;
    config.numBlocks = 8;
    Scheduler scheduler(config);
    scheduler.addRequest(makeRequest("late", 3, tokens(1, 3), 1));
    for (int s = 0; s < 3; ++s) {
        EXPECT_TRUE(step(scheduler).requests.empty());
        EXPECT_TRUE(scheduler.waiting().empty());
    }
    const SchedulerOutput out = step(scheduler);
    EXPECT_EQ(out.step, 3);
    ASSERT_EQ(out.requests.size(), 1u);
    EXPECT_EQ(scheduler.request("late").finishedStep, 3);
}

TEST(SchedulerTest, RefusesWhatCanNeverRun) {
    PagedConfig config;
    config.blockSize = 4;
    config.numBlocks = 2;
    Scheduler scheduler(config);
    EXPECT_THROW(scheduler.addRequest(makeRequest("", 0, tokens(1, 3), 1)), PagedError);
    EXPECT_THROW(scheduler.addRequest(makeRequest("empty", 0, {}, 1)), PagedError);
    EXPECT_THROW(scheduler.addRequest(makeRequest("none", 0, tokens(1, 3), 0)), PagedError);
    scheduler.addRequest(makeRequest("big", 0, tokens(1, 12), 1));
    EXPECT_THROW(scheduler.addRequest(makeRequest("big", 0, tokens(1, 3), 1)), PagedError);
    try {
        scheduler.schedule();
        FAIL() << "a 12-token prompt cannot fit 2 blocks of 4";
    } catch (const PagedError& error) {
        EXPECT_NE(std::string(error.what()).find("--num-blocks"), std::string::npos) << error.what();
    }
}
