// SPDX-License-Identifier: GPL-3.0-or-later
// PagedRecorder: the events of a serving run, written to a session file and read back, rebuild the live
// bookkeeping at every step; tests/data/sessions/golden-1.4.kvsess is such a run.
#include "kvscope/paged/PagedRecorder.h"

#include "PagedTestHelpers.h"
#include "kvscope/paged/Scheduler.h"
#include "kvscope/trace/EventEmitter.h"
#include "kvscope/trace/FanOutSink.h"
#include "kvscope/trace/RecordingSink.h"
#include "kvscope/trace/SessionReader.h"
#include "kvscope/trace/SessionWriter.h"
#include "kvscope/trace/Timeline.h"

#include <cstdlib>
#include <gtest/gtest.h>
#include <set>

using namespace kvscope::paged;
using namespace kvscope::paged::testing;
namespace trace = kvscope::trace;

namespace {

const std::filesystem::path kGolden =
    std::filesystem::path(KVSCOPE_TEST_DATA_DIR) / "sessions/golden-1.4.kvsess";

/// A hybrid model (full attention + an 8-token sliding window) on a pool small enough that prefixes are
/// shared, blocks evicted, a sliding window drops blocks and a request is preempted: every paged event kind.
PagedConfig goldenConfig() {
    PagedConfig config;
    config.blockSize = 4;
    config.numBlocks = 14;
    config.maxNumBatchedTokens = 12;
    config.maxNumSeqs = 4;
    config.groups = {LayerGroup{GroupKind::Full, 0, {1, 3}}, LayerGroup{GroupKind::Sliding, 8, {0, 2}}};
    return config;
}

void addGoldenRequests(Scheduler& scheduler) {
    scheduler.addRequest(makeRequest("a", 0, tokens(10, 10), 8));
    scheduler.addRequest(makeRequest("b", 1, concat(tokens(10, 8), tokens(60, 3)), 8));
    scheduler.addRequest(makeRequest("c", 2, tokens(100, 6), 6));
    scheduler.addRequest(makeRequest("d", 9, concat(tokens(10, 9), tokens(80, 2)), 2));
}

/// Runs the golden workload, checking the replayed state against the live one after every step.
std::vector<trace::PagedState> runGolden(trace::EventSink& sink, const trace::Timeline* timeline) {
    trace::EventEmitter emitter(&sink);
    Scheduler scheduler(goldenConfig(), &emitter);
    addGoldenRequests(scheduler);
    std::vector<trace::PagedState> live;
    while (scheduler.hasUnfinishedRequests()) {
        step(scheduler);
        live.push_back(scheduler.pagedState());
        if (timeline != nullptr) {
            EXPECT_EQ(timeline->latestState().paged, live.back()) << "step " << live.size() - 1;
        }
    }
    return live;
}

trace::SessionMetadata goldenMetadata() {
    trace::SessionMetadata metadata;
    metadata.kvscopeVersion = "0.1.0";
    metadata.model = "none (scheduler test: the fake model samples 5000 + tokens held)";
    metadata.cacheKind = "paged";
    metadata.cacheSettingsJson = R"({"block_size": 4, "num_blocks": 14, "free_policy": "document"})";
    return metadata;
}

} // namespace

TEST(PagedRecorderTest, EveryPagedEventKindIsRecorded) {
    trace::RecordingSink recording;
    runGolden(recording, nullptr);
    std::set<trace::EventKind> kinds;
    for (const trace::Event& event : recording.events())
        kinds.insert(event.kind());
    for (auto kind = static_cast<std::uint8_t>(trace::EventKind::PagedPool);
         kind <= static_cast<std::uint8_t>(trace::EventKind::BlockEvicted); ++kind) {
        EXPECT_TRUE(kinds.contains(static_cast<trace::EventKind>(kind)))
            << trace::toString(static_cast<trace::EventKind>(kind)) << " never recorded";
    }
    EXPECT_TRUE(kinds.contains(trace::EventKind::RequestTokens)) << "request_tokens never recorded";
}

TEST(PagedRecorderTest, ReplayRebuildsTheLiveBookkeepingAtEveryStep) {
    trace::Timeline timeline;
    const auto live = runGolden(timeline, &timeline);
    ASSERT_EQ(timeline.stepCount(), static_cast<std::int64_t>(live.size()));
    for (std::int64_t step = 0; step < timeline.stepCount(); ++step)
        EXPECT_EQ(timeline.stateAt(step).paged, live[static_cast<std::size_t>(step)]) << "step " << step;
}

TEST(PagedRecorderTest, GoldenSessionHoldsTheseEvents) {
    if (std::getenv("KVSCOPE_REGENERATE_GOLDEN") != nullptr) {
        trace::RecordingSink recording;
        runGolden(recording, nullptr);
        trace::SessionWriter::save(kGolden, goldenMetadata(), recording.events());
    }
    trace::RecordingSink recording;
    const auto live = runGolden(recording, nullptr);
    const trace::SessionContents contents = trace::SessionReader::read(kGolden);
    ASSERT_TRUE(contents.complete) << contents.damage;
    EXPECT_EQ(contents.version, (trace::FormatVersion{1, 4}));
    EXPECT_EQ(contents.events, recording.events());
    trace::Timeline timeline;
    timeline.emitAll(contents.events);
    ASSERT_EQ(timeline.stepCount(), static_cast<std::int64_t>(live.size()));
    for (std::int64_t step = 0; step < timeline.stepCount(); ++step)
        EXPECT_EQ(timeline.stateAt(step).paged, live[static_cast<std::size_t>(step)]) << "step " << step;
}
