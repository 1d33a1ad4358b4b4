// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/models/PagedHistory.h"

#include "PagedTestSessions.h"
#include "kvscope/trace/Timeline.h"

#include <algorithm>
#include <gtest/gtest.h>

namespace kvscope::gui {
namespace {

using Phase = PagedHistory::Phase;
using Lane = PagedHistory::LaneCell;

trace::Timeline timelineOf(const std::vector<trace::Event>& events) {
    trace::Timeline timeline;
    timeline.emitAll(events);
    return timeline;
}

std::uint64_t sequenceOf(const std::vector<trace::Event>& events, trace::EventKind kind,
                         const std::string& request) {
    for (const trace::Event& event : events) {
        if (event.kind() != kind) {
            continue;
        }
        const bool matches = std::visit(
            [&](const auto& e) {
                if constexpr (requires { e.requestId; }) {
                    return e.requestId == request;
                } else {
                    return request.empty();
                }
            },
            event.payload);
        if (matches) {
            return event.sequence;
        }
    }
    ADD_FAILURE() << "no " << trace::toString(kind) << " of '" << request << "'";
    return 0;
}

TEST(PagedHistoryTest, TheDesignDocumentExampleStepByStep) {
    const std::vector<trace::Event> events = testing::designExample();
    const trace::Timeline timeline = timelineOf(events);
    PagedHistory history;
    history.extend(timeline);
    ASSERT_TRUE(history.active());
    ASSERT_EQ(history.stepCount(), 6);
    EXPECT_EQ(history.requestIds(), (std::vector<std::string>{"r0", "r1", "r2"}));
    EXPECT_EQ(history.text("r0", 0, 5), "You are a helpful assistant");
    EXPECT_EQ(history.piece("r0", 15), " keeps"); // sampled at step 0
    EXPECT_EQ(history.text("r0", 12, 16), " the KV cache keeps");
    EXPECT_EQ(history.tokenCount("r0"), 19);
    EXPECT_EQ(history.piece("r0", 19), std::nullopt);
    EXPECT_EQ(history.promptTokens("r2"), 29);

    // used blocks, scheduled tokens, queried and hit tokens, evictions, per step (worked by hand from the
    // design document: r0 holds 0..4 until it finishes at step 3; r1 and r2 finish in the step they arrive).
    struct Row {
        std::int32_t used;
        std::int64_t scheduled, query, hit, totalQuery, totalHit;
        std::int32_t evictions, running;
    };
    const std::vector<Row> rows = {
        {4, 15, 15, 0, 15, 0, 0, 1}, {4, 1, 0, 0, 15, 0, 0, 1},  {5, 1, 0, 0, 15, 0, 0, 1},
        {0, 1, 0, 0, 15, 0, 0, 0},   {0, 6, 14, 8, 29, 8, 0, 0}, {0, 17, 29, 12, 58, 20, 1, 0},
    };
    for (std::int64_t step = 0; step < 6; ++step) {
        const PagedHistory::StepMetrics& m = history.metrics(step);
        const Row& row = rows[static_cast<std::size_t>(step)];
        EXPECT_EQ(m.usedBlocks, row.used) << step;
        EXPECT_EQ(m.scheduledTokens, row.scheduled) << step;
        EXPECT_EQ(m.queryTokens, row.query) << step;
        EXPECT_EQ(m.hitTokens, row.hit) << step;
        EXPECT_EQ(m.totalQueryTokens, row.totalQuery) << step;
        EXPECT_EQ(m.totalHitTokens, row.totalHit) << step;
        EXPECT_EQ(m.evictions, row.evictions) << step;
        EXPECT_EQ(m.preemptions, 0) << step;
        EXPECT_EQ(m.runningRequests, row.running) << step;
    }

    const PagedHistory::StepChanges& last = history.changes(5);
    EXPECT_EQ(last.allocated, (std::vector<std::int32_t>{7, 8, 9, 4, 3}));
    EXPECT_EQ(last.touched, (std::vector<std::int32_t>{0, 1, 2}));
    EXPECT_EQ(last.evicted, (std::vector<std::int32_t>{3}));
    std::vector<std::int32_t> cached = last.cached;
    std::sort(cached.begin(), cached.end());
    EXPECT_EQ(cached, (std::vector<std::int32_t>{4, 7, 8, 9}));
    EXPECT_EQ(history.changes(4).touched, (std::vector<std::int32_t>{0, 1}));
    EXPECT_EQ(history.changes(4).allocated, (std::vector<std::int32_t>{5, 6}));

    const std::vector<std::vector<Lane>> lanes = {
        {{Phase::Prefill, 0, 15, true},
         {Phase::Decode, 15, 1, true},
         {Phase::Decode, 16, 1, true},
         {Phase::Decode, 17, 1, true},
         {Phase::Finished},
         {Phase::Finished}},
        {{}, {}, {}, {}, {Phase::Prefill, 8, 6, true}, {Phase::Finished}},
        {{}, {}, {}, {}, {}, {Phase::Prefill, 12, 17, true}},
    };
    for (std::size_t r = 0; r < 3; ++r) {
        for (std::int64_t step = 0; step < 6; ++step) {
            EXPECT_EQ(history.lane(history.requestIds()[r], step), lanes[r][static_cast<std::size_t>(step)])
                << history.requestIds()[r] << " step " << step;
        }
    }

    const std::uint64_t admitted = sequenceOf(events, trace::EventKind::RequestAdmitted, "r2");
    EXPECT_EQ(history.hitsOf(admitted), (std::vector<std::int32_t>{0, 1, 2}));
    const std::uint64_t evicted = sequenceOf(events, trace::EventKind::BlockEvicted, "");
    const PagedHistory::CacheRecord* record = history.cachedBy(3, evicted);
    ASSERT_NE(record, nullptr);
    EXPECT_EQ(record->requestId, "r0");
    EXPECT_EQ(record->tokenBegin, 12);
    EXPECT_EQ(record->tokenEnd, 16);
    EXPECT_EQ(record->step, 1);
    EXPECT_TRUE(history.cachedAt(3, evicted));
    EXPECT_FALSE(history.cachedAt(3, evicted + 1));

    const std::uint64_t finished = sequenceOf(events, trace::EventKind::RequestFinished, "r1");
    const std::vector<PagedHistory::Release> releases = history.releasesOf(finished);
    ASSERT_EQ(releases.size(), 4u);
    const std::vector<std::int32_t> freedOrder = {releases[0].block, releases[1].block, releases[2].block,
                                                  releases[3].block};
    EXPECT_EQ(freedOrder, (std::vector<std::int32_t>{6, 5, 1, 0}));
    EXPECT_EQ(releases[0].queuePosition, 6); // after 7 8 9 4 3 2
    EXPECT_EQ(releases[3].queuePosition, 9);
    EXPECT_EQ(releases[3].queueLength, 10);
}

// The used-blocks metric, counted from events, agrees with the replayed pool (an independent reduction)
// at every step, and a history extended step by step (a live session) equals one built at once.
TEST(PagedHistoryTest, GrowingAsALiveSessionGivesWhatTheWholeSessionGives) {
    for (const std::vector<trace::Event>& events :
         {testing::designExample(), testing::sharedFinish(), testing::preemption()}) {
        const trace::Timeline whole = timelineOf(events);
        PagedHistory once;
        once.extend(whole);
        trace::Timeline growing;
        PagedHistory live;
        for (const trace::Event& event : events) {
            growing.emit(event);
            live.extend(growing);
        }
        ASSERT_EQ(live.stepCount(), once.stepCount());
        for (std::int64_t step = 0; step < whole.stepCount(); ++step) {
            const trace::PagedState pool = whole.stateAt(step).paged;
            const auto usable = pool.numBlocks - (pool.nullBlock >= 0 ? 1 : 0);
            EXPECT_EQ(once.metrics(step).usedBlocks,
                      usable - static_cast<std::int32_t>(pool.freeQueue.size()))
                << step;
            EXPECT_EQ(live.metrics(step), once.metrics(step)) << step;
            EXPECT_EQ(once.metrics(step).totalHitTokens, pool.hitTokens) << step;
            EXPECT_EQ(once.metrics(step).totalQueryTokens, pool.queryTokens) << step;
            for (const std::string& id : once.requestIds()) {
                EXPECT_EQ(live.lane(id, step), once.lane(id, step)) << id << " " << step;
            }
        }
    }
}

TEST(PagedHistoryTest, PreemptionsNameWhomTheyServed) {
    const std::vector<trace::Event> events = testing::preemption();
    PagedHistory history;
    history.extend(timelineOf(events));
    const std::uint64_t preempted = sequenceOf(events, trace::EventKind::RequestPreempted, "r1");
    EXPECT_EQ(history.preemptedFor(preempted), "r0");
    const std::vector<PagedHistory::Release> releases = history.releasesOf(preempted);
    ASSERT_EQ(releases.size(), 2u);
    EXPECT_EQ(releases[0].block, 3);
    EXPECT_EQ(releases[1].block, 1);
    EXPECT_EQ(history.metrics(5).preemptions, 1);
    EXPECT_EQ(history.metrics(5).evictions, 1); // r0's new block was r1's cached block 3
    EXPECT_EQ(history.lane("r1", 5).phase, Phase::Preempted);
    EXPECT_EQ(history.lane("r1", 6).phase, Phase::Waiting);
    EXPECT_EQ(history.lane("r0", 5), (Lane{Phase::Decode, 8, 1, true}));
}

TEST(PagedHistoryTest, SessionsWithoutAPoolStayInactive) {
    trace::Timeline timeline;
    timeline.emit(trace::Event{0, -1, 0, trace::StepBeginEvent{-1, "prompt"}});
    timeline.emit(trace::Event{0, 0, 1, trace::UpdateEvent{4, 4, 4, -1, 4, 64}});
    PagedHistory history;
    history.extend(timeline);
    EXPECT_FALSE(history.active());
    EXPECT_EQ(history.stepCount(), 0);
    EXPECT_EQ(history.metrics(0), PagedHistory::StepMetrics{});
    EXPECT_EQ(history.lane("r0", 0), Lane{});
}

} // namespace
} // namespace kvscope::gui
