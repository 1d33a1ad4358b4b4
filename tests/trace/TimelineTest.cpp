// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/trace/Timeline.h"

#include "TraceTestHelpers.h"
#include "kvscope/synthetic/SyntheticSession.h"
#include "kvscope/trace/RecordingSink.h"
#include "kvscope/trace/SessionError.h"
#include "kvscope/trace/SessionReader.h"
#include "kvscope/trace/SessionWriter.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <iterator>
#include <stdexcept>

using namespace kvscope::trace;
using namespace kvscope::synthetic;
using kvscope::trace::testing::eventsOf;
using kvscope::trace::testing::expectSameSeries;
using kvscope::trace::testing::fileMetadata;
using kvscope::trace::testing::kAllFields;
using kvscope::trace::testing::makeEvent;
using kvscope::trace::testing::replayFromStart;

namespace {

// Small but busy: every layer kind, transfers, crops, resets, batch ops, empty steps.
SyntheticSessionOptions irregularSession(std::uint64_t seed) {
    SyntheticSessionOptions options;
    options.layers = 6;
    options.tokens = 400;
    options.promptTokens = 16;
    options.seed = seed;
    options.slidingEvery = 3;
    options.window = 40;
    options.quantizedEvery = 4;
    options.residualLength = 16;
    options.staticEvery = 5;
    options.offload = true;
    options.irregular = true;
    return options;
}

std::vector<Event> recordSession(const SyntheticSessionOptions& options) {
    RecordingSink sink;
    SyntheticSession::generate(options, sink);
    return sink.takeEvents();
}

Timeline timelineOf(const std::vector<Event>& events, std::int64_t interval) {
    Timeline timeline(interval);
    for (const Event& event : events)
        timeline.emit(event);
    return timeline;
}

// The field mapping itself, against literal values: one quantized layer whose quantities all differ,
// so a field that read another field's member would fail here (the comparisons below check the fast
// path against the slow one, and would not notice a mapping both share).
TEST(TimelineTest, EachSeriesFieldReadsItsOwnQuantity) {
    Timeline timeline;
    timeline.emit(makeEvent(0, 0, UpdateEvent{11, 11, 10, -1, 11, 0, LayerKind::Quantized}));
    timeline.emit(makeEvent(0, 0, QuantizeFlushEvent{8, 11, 3, 8, 0, 0}));
    timeline.emit(makeEvent(0, 0, MaskSizesEvent{1, 12, 0}));
    timeline.emit(makeEvent(0, 0, MemoryEvent{500, 40, 7}));
    timeline.emit(makeEvent(0, -1, StepEndEvent{-1, "", 900}));
    struct Case {
        SeriesField field;
        double value;
    };
    const Case cases[] = {
        {SeriesField::SeqLength, 11},
        {SeriesField::StoredTokens, 10},
        {SeriesField::KvLength, 12},
        {SeriesField::ResidualTokens, 3},
        {SeriesField::QuantizedTokens, 8},
        {SeriesField::BytesDeviceFullPrecision, 500},
        {SeriesField::BytesDeviceQuantized, 40},
        {SeriesField::BytesHost, 7},
    };
    for (const Case& c : cases) {
        const std::vector<SeriesPoint> series = timeline.seriesOf(0, c.field, 0, 0, 10);
        ASSERT_EQ(series.size(), 1u) << toString(c.field);
        EXPECT_EQ(series[0].value, c.value) << toString(c.field);
        const std::vector<std::vector<SeriesPoint>> each = timeline.seriesOfEachLayer(c.field, 0, 0, 10);
        ASSERT_EQ(each.size(), 1u) << toString(c.field);
        EXPECT_EQ(each[0].at(0).value, c.value) << "seriesOfEachLayer " << toString(c.field);
    }
    EXPECT_EQ(timeline.seriesOf(-1, SeriesField::WallNs, 0, 0, 10).at(0).value, 900);
    // The whole cache: tokens summed over layers, memory from the cache-wide totals.
    const StepState state = timeline.stateAt(0);
    EXPECT_EQ(seriesValue(state, -1, SeriesField::SeqLength), 11);
    EXPECT_EQ(seriesValue(state, 3, SeriesField::SeqLength), 0) << "a layer the session never had";
    EXPECT_EQ(seriesValue(state, 0, SeriesField::WallNs), 900) << "cache-wide whatever the layer";
}

} // namespace

class TimelineIntervalTest : public ::testing::TestWithParam<std::int64_t> {};

TEST_P(TimelineIntervalTest, StateAtEveryStepEqualsReplayFromStart) {
    const std::int64_t interval = GetParam();
    for (std::uint64_t seed : {1u, 2u, 3u}) {
        const std::vector<Event> events = recordSession(irregularSession(seed));
        const Timeline timeline = timelineOf(events, interval);
        ASSERT_EQ(timeline.stepCount(), 401);
        std::int64_t checked = 0;
        replayFromStart(events, timeline.stepCount(), [&](const StepState& expected) {
            const StepState actual = timeline.stateAt(expected.step);
            if (actual != expected)
                ADD_FAILURE() << "seed " << seed << ", interval " << interval << ": state differs at step "
                              << expected.step;
            ++checked;
        });
        EXPECT_EQ(checked, 401);
    }
}

TEST_P(TimelineIntervalTest, QueriesWhileStreamingMatchReplay) {
    // A live session asks for states while events still arrive; keyframes are cut as steps close.
    const std::int64_t interval = GetParam();
    const std::vector<Event> events = recordSession(irregularSession(7));
    std::vector<StepState> expected;
    replayFromStart(events, events.back().step + 1,
                    [&](const StepState& state) { expected.push_back(state); });

    Timeline timeline(interval);
    for (std::size_t i = 0; i < events.size(); ++i) {
        timeline.emit(events[i]);
        const bool stepComplete = i + 1 == events.size() || events[i + 1].step != events[i].step;
        if (!stepComplete)
            continue;
        const std::int64_t last = timeline.stepCount() - 1;
        ASSERT_EQ(timeline.stateAt(last), expected[static_cast<std::size_t>(last)]) << "step " << last;
        ASSERT_EQ(timeline.latestState(), expected[static_cast<std::size_t>(last)]);
        for (std::int64_t back : {std::int64_t{1}, interval - 1, interval, interval + 1}) {
            const std::int64_t step = last - back;
            if (step >= 0 && step < last) {
                ASSERT_EQ(timeline.stateAt(step), expected[static_cast<std::size_t>(step)])
                    << "step " << step;
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(KeyframeIntervals, TimelineIntervalTest,
                         ::testing::Values(1, 2, 3, 7, 32, 64, 1000));

TEST(TimelineTest, SessionUnderTestExercisesTheHardCases) {
    // Guards the randomised test above against a generator that stops producing the edge cases.
    const std::vector<Event> events = recordSession(irregularSession(1));
    const Timeline timeline = timelineOf(events, 32);
    std::int64_t emptySteps = 0;
    for (std::int64_t step = 0; step < timeline.stepCount(); ++step)
        emptySteps += timeline.eventsOfStep(step).empty() ? 1 : 0;
    EXPECT_GT(emptySteps, 0);
    const auto count = [&](EventKind kind) {
        return std::count_if(events.begin(), events.end(), [&](const Event& e) { return e.kind() == kind; });
    };
    EXPECT_GT(count(EventKind::Crop), 0);
    EXPECT_GT(count(EventKind::WindowSlide), 0);
    EXPECT_GT(count(EventKind::QuantizeFlush), 0);
    EXPECT_GT(count(EventKind::Transfer), 0);
    EXPECT_GT(count(EventKind::Reorder), 0);
    EXPECT_GT(count(EventKind::Reset), 0);
}

TEST(TimelineTest, EventsOfStepPartitionTheSessionInOrder) {
    const std::vector<Event> events = recordSession(irregularSession(4));
    const Timeline timeline = timelineOf(events, 16);
    ASSERT_EQ(timeline.eventCount(), events.size());
    std::vector<Event> concatenated;
    for (std::int64_t step = 0; step < timeline.stepCount(); ++step) {
        for (const Event& event : timeline.eventsOfStep(step)) {
            EXPECT_EQ(event.step, step);
            concatenated.push_back(event);
        }
    }
    EXPECT_EQ(concatenated, events);
    EXPECT_TRUE(timeline.eventsOfStep(-1).empty());
    EXPECT_TRUE(timeline.eventsOfStep(timeline.stepCount()).empty());
    EXPECT_EQ(timeline.events().size(), events.size());
}

TEST(TimelineTest, EmitAllInBatchesEqualsEmittingEachEvent) {
    const std::vector<Event> events = recordSession(irregularSession(5));
    const Timeline each = timelineOf(events, Timeline::kDefaultKeyframeInterval);
    Timeline batched;
    const std::span<const Event> all(events);
    for (std::size_t begin = 0; begin < all.size(); begin += 37) {
        batched.emitAll(all.subspan(begin, std::min<std::size_t>(37, all.size() - begin)));
    }
    ASSERT_EQ(batched.stepCount(), each.stepCount());
    for (std::int64_t step = 0; step < each.stepCount(); step += 13) {
        EXPECT_EQ(*batched.snapshotAt(step), *each.snapshotAt(step)) << "step " << step;
    }
    EXPECT_EQ(std::vector<Event>(batched.events().begin(), batched.events().end()), events);
}

TEST(TimelineTest, EmptyTimeline) {
    Timeline timeline;
    EXPECT_EQ(timeline.stepCount(), 0);
    EXPECT_EQ(timeline.layerCount(), 0);
    EXPECT_EQ(timeline.eventCount(), 0u);
    EXPECT_TRUE(timeline.eventsOfStep(0).empty());
    EXPECT_THROW(timeline.stateAt(0), std::out_of_range);
    EXPECT_TRUE(timeline.seriesOf(0, SeriesField::StoredTokens, 0, 10, 100).empty());
    EXPECT_THROW(Timeline(0), std::invalid_argument);
}

TEST(TimelineTest, SkippedStepsHaveNoEventsAndCarryTheState) {
    Timeline timeline(2);
    timeline.emit(makeEvent(3, 0, UpdateEvent{.tokensIn = 4, .seqLength = 4, .storedTokens = 4}));
    timeline.emit(makeEvent(3, -1, StepEndEvent{11, "a", 1}));
    timeline.emit(makeEvent(7, 0, UpdateEvent{.tokensIn = 1, .seqLength = 5, .storedTokens = 5}));
    ASSERT_EQ(timeline.stepCount(), 8);
    EXPECT_EQ(timeline.layerCount(), 1);
    for (std::int64_t step : {0, 1, 2, 4, 5, 6})
        EXPECT_TRUE(timeline.eventsOfStep(step).empty()) << step;

    const StepState beforeFirst = timeline.stateAt(1);
    EXPECT_EQ(beforeFirst.step, 1);
    EXPECT_TRUE(beforeFirst.layers.empty());

    EXPECT_EQ(timeline.stateAt(3).tokenId, 11);
    const StepState gap = timeline.stateAt(6);
    EXPECT_EQ(gap.step, 6);
    EXPECT_EQ(gap.tokenId, -1); // token fields belong to the step that produced them
    EXPECT_EQ(gap.layers.at(0).seqLength, 4);
    EXPECT_EQ(timeline.stateAt(7).layers.at(0).seqLength, 5);
    EXPECT_THROW(timeline.stateAt(8), std::out_of_range);
    EXPECT_THROW(timeline.stateAt(-1), std::out_of_range);
}

TEST(TimelineTest, LateEventsAreFiledUnderTheLatestStep) {
    Timeline timeline(4);
    timeline.emit(makeEvent(0, 0, UpdateEvent{.tokensIn = 2, .seqLength = 2, .storedTokens = 2}));
    timeline.emit(makeEvent(2, 0, UpdateEvent{.tokensIn = 1, .seqLength = 3, .storedTokens = 3}));
    timeline.emit(makeEvent(1, 0, MaskSizesEvent{1, 3, 0})); // out of order: kept, filed under step 2
    EXPECT_EQ(timeline.stepCount(), 3);
    EXPECT_EQ(timeline.eventsOfStep(2).size(), 2u);
    EXPECT_TRUE(timeline.eventsOfStep(1).empty());
    EXPECT_EQ(timeline.stateAt(1).layers.at(0).kvLength, 0);
    EXPECT_EQ(timeline.stateAt(2).layers.at(0).kvLength, 3);
}

TEST(TimelineTest, SnapshotEqualsStateAndClearForgetsEverything) {
    Timeline timeline = timelineOf(recordSession(irregularSession(5)), 8);
    const std::shared_ptr<const StepState> snapshot = timeline.snapshotAt(123);
    ASSERT_NE(snapshot, nullptr);
    EXPECT_EQ(*snapshot, timeline.stateAt(123));
    EXPECT_GT(timeline.memoryBytes(), timeline.eventCount() * sizeof(Event) - 1);

    timeline.clear();
    EXPECT_EQ(timeline.stepCount(), 0);
    EXPECT_EQ(timeline.eventCount(), 0u);
    EXPECT_EQ(timeline.layerCount(), 0);
    EXPECT_EQ(timeline.keyframeInterval(), 8);
    timeline.emit(makeEvent(0, 1, MaskSizesEvent{1, 1, 0}));
    EXPECT_EQ(timeline.stateAt(0).layers.size(), 2u);
}

TEST(TimelineTest, SeriesWithoutDownsamplingEqualStateAtEveryStep) {
    const Timeline timeline = timelineOf(recordSession(irregularSession(6)), 16);
    std::vector<StepState> states;
    for (std::int64_t step = 0; step < timeline.stepCount(); ++step)
        states.push_back(timeline.stateAt(step));

    struct Range {
        std::int64_t from;
        std::int64_t to;
    };
    const Range ranges[] = {{0, 400}, {17, 250}, {31, 33}, {399, 400}, {120, 120}, {-50, 1000}};
    for (std::int32_t layer = -1; layer < timeline.layerCount(); ++layer) {
        for (SeriesField field : kAllFields) {
            for (const Range& range : ranges) {
                const std::vector<SeriesPoint> series =
                    timeline.seriesOf(layer, field, range.from, range.to, 100000);
                const std::int64_t from = std::max<std::int64_t>(range.from, 0);
                const std::int64_t to = std::min<std::int64_t>(range.to, timeline.stepCount() - 1);
                ASSERT_EQ(series.size(), static_cast<std::size_t>(to - from + 1));
                for (std::size_t i = 0; i < series.size(); ++i) {
                    const std::int64_t step = from + static_cast<std::int64_t>(i);
                    ASSERT_EQ(series[i].step, step);
                    ASSERT_EQ(series[i].value,
                              seriesValue(states[static_cast<std::size_t>(step)], layer, field))
                        << "layer " << layer << " field " << toString(field) << " step " << step;
                }
            }
        }
    }
}

TEST(TimelineTest, SeriesKeepPeaksWithinTheBudget) {
    SyntheticSessionOptions options;
    options.layers = 4;
    options.tokens = 3000;
    options.slidingEvery = 2;
    options.window = 500;
    options.quantizedEvery = 4;
    const Timeline timeline = timelineOf(recordSession(options), 32);

    const std::vector<SeriesPoint> full = timeline.seriesOf(2, SeriesField::ResidualTokens, 0, 3000, 1 << 20);
    ASSERT_EQ(timeline.stateAt(0).layers.at(2).kind, LayerKind::Quantized);
    const std::vector<SeriesPoint> reduced = timeline.seriesOf(2, SeriesField::ResidualTokens, 0, 3000, 200);
    EXPECT_LE(reduced.size(), 200u);
    EXPECT_GE(reduced.size(), 100u);
    const auto byValue = [](const SeriesPoint& a, const SeriesPoint& b) { return a.value < b.value; };
    EXPECT_EQ(std::max_element(reduced.begin(), reduced.end(), byValue)->value,
              std::max_element(full.begin(), full.end(), byValue)->value);
    // The residual saw-tooth peaks just before each flush; every tooth survives downsampling.
    const auto peaks =
        std::count_if(reduced.begin(), reduced.end(), [](const SeriesPoint& p) { return p.value == 127; });
    EXPECT_GE(peaks, 3000 / 128 - 1);
    for (const SeriesPoint& point : reduced)
        EXPECT_EQ(point, full[static_cast<std::size_t>(point.step)]);
}

TEST(TimelineTest, BroadcastsReachOnlyLayersAlreadyKnown) {
    // Layer 1 is first seen after the first crop, so that crop must not touch it, in stateAt nor
    // in the per-layer fold behind seriesOf; the second crop reaches it.
    Timeline timeline(4);
    timeline.emit(makeEvent(0, 0, UpdateEvent{.tokensIn = 10, .seqLength = 10, .storedTokens = 10}));
    timeline.emit(makeEvent(1, -1, CropEvent{6, 10, 6}));
    timeline.emit(makeEvent(1, 1, MaskSizesEvent{10, 10, 0}));
    timeline.emit(makeEvent(2, -1, CropEvent{4, 6, 4}));
    EXPECT_EQ(timeline.stateAt(1).layers.at(0).seqLength, 6);
    EXPECT_EQ(timeline.stateAt(1).layers.at(1).seqLength, 0);
    EXPECT_EQ(timeline.stateAt(2).layers.at(1).seqLength, 4);

    const std::vector<SeriesPoint> series = timeline.seriesOf(1, SeriesField::SeqLength, 0, 2, 10);
    ASSERT_EQ(series.size(), 3u);
    EXPECT_EQ(series[0].value, 0);
    EXPECT_EQ(series[1].value, 0);
    EXPECT_EQ(series[2].value, 4);
    EXPECT_TRUE(timeline.seriesOf(2, SeriesField::SeqLength, 0, 1, 10).empty());
    EXPECT_TRUE(timeline.seriesOf(-2, SeriesField::SeqLength, 0, 1, 10).empty());
}

TEST(TimelineTest, SeriesOfEachLayerEqualsSeriesOfEveryLayer) {
    const Timeline timeline = timelineOf(recordSession(irregularSession(8)), 16);
    for (SeriesField field : kAllFields) {
        for (std::size_t budget : {std::size_t{40}, std::size_t{100000}}) {
            const auto all = timeline.seriesOfEachLayer(field, 5, 390, budget);
            ASSERT_EQ(all.size(), static_cast<std::size_t>(timeline.layerCount()));
            for (std::int32_t layer = 0; layer < timeline.layerCount(); ++layer) {
                EXPECT_EQ(all[static_cast<std::size_t>(layer)],
                          timeline.seriesOf(layer, field, 5, 390, budget))
                    << "layer " << layer << " field " << toString(field);
            }
        }
    }
    EXPECT_TRUE(timeline.seriesOfEachLayer(SeriesField::StoredTokens, 500, 600, 10).empty());
}

// ---- File-backed timelines (Timeline::openFile): the events stay in the file, decoded per step on demand.

namespace {

using kvscope::trace::testing::TemporaryFolder;

} // namespace

TEST(TimelineTest, FileBackedEqualsInMemoryEverywhere) {
    // The oracle is the in-memory timeline of the same events: state, events, series, retained events.
    const std::vector<Event> events = recordSession(irregularSession(3));
    TemporaryFolder folder;
    const auto path = folder.file("s.kvsess");
    SessionWriter::save(path, fileMetadata(), events);
    const Timeline memory = timelineOf(events, 16);
    SessionContents contents;
    const Timeline file = Timeline::openFile(path, contents, 8, 16);
    ASSERT_TRUE(file.fileBacked());
    EXPECT_TRUE(contents.complete) << contents.damage;
    EXPECT_TRUE(contents.events.empty()) << "opening keeps no events";
    EXPECT_TRUE(file.events().empty());
    ASSERT_EQ(file.stepCount(), memory.stepCount());
    EXPECT_EQ(file.layerCount(), memory.layerCount());
    EXPECT_EQ(file.eventCount(), memory.eventCount());
    EXPECT_EQ(file.latestState(), memory.latestState());
    for (std::int64_t step = 0; step < memory.stepCount(); ++step) {
        ASSERT_EQ(file.stateAt(step), memory.stateAt(step)) << "step " << step;
        ASSERT_EQ(eventsOf(file.eventsOfStep(step)), eventsOf(memory.eventsOfStep(step))) << "step " << step;
    }
    EXPECT_LE(file.frameCache()->size(), 8u);
    EXPECT_EQ(file.collectEvents(), events);
    const std::vector<Event> retained(memory.retainedEvents().begin(), memory.retainedEvents().end());
    EXPECT_EQ(std::vector<Event>(file.retainedEvents().begin(), file.retainedEvents().end()), retained);
    EXPECT_FALSE(retained.empty()) << "the session has flushes and resets";
    // Transfers and compute spans are not retained events: the compact spans hold them, in order, both ways.
    std::vector<TimedSpan> expected;
    for (const Event& event : events) {
        if (const auto* transfer = std::get_if<TransferEvent>(&event.payload)) {
            expected.push_back({transfer->beginNs, transfer->endNs, static_cast<std::int32_t>(event.step),
                                static_cast<std::int16_t>(event.layer),
                                transfer->direction == TransferDirection::Prefetch ? TimedSpan::Lane::Prefetch
                                                                                   : TimedSpan::Lane::Offload,
                                transfer->timing == TimingSource::Measured});
        } else if (const auto* compute = std::get_if<ComputeEvent>(&event.payload)) {
            expected.push_back({compute->beginNs, compute->endNs, static_cast<std::int32_t>(event.step),
                                static_cast<std::int16_t>(event.layer), TimedSpan::Lane::Compute,
                                compute->timing == TimingSource::Measured});
        }
    }
    ASSERT_FALSE(expected.empty()) << "the session has transfers";
    const auto spansOf = [](const Timeline& timeline) {
        const auto spans = timeline.timedSpans().spans();
        return std::vector<TimedSpan>(spans.begin(), spans.end());
    };
    EXPECT_EQ(spansOf(memory), expected);
    EXPECT_EQ(spansOf(file), expected);
    for (const Event& event : retained) {
        EXPECT_FALSE(TimedSpans::accepts(event.kind())) << toString(event.kind()) << " retained as an event";
    }
    for (const auto& [from, to] : {std::pair<std::int64_t, std::int64_t>{0, 400}, {37, 90}, {399, 400}}) {
        expectSameSeries(file, memory, from, to);
    }
    const auto each = file.seriesOfEachLayer(SeriesField::StoredTokens, 0, 400, 50);
    EXPECT_EQ(each, memory.seriesOfEachLayer(SeriesField::StoredTokens, 0, 400, 50));
}

TEST(TimelineTest, FileBackedStateAtLiteralStepsEqualsTheFullyLoadedOne) {
    // A regular session: a 20-token prompt, then one token a step, so every dynamic layer's seq_length
    // after step k is 20 + k (an oracle independent of both timelines).
    SyntheticSessionOptions options;
    options.layers = 3;
    options.tokens = 700;
    options.promptTokens = 20;
    options.slidingEvery = 0;
    options.quantizedEvery = 0;
    const std::vector<Event> events = recordSession(options);
    TemporaryFolder folder;
    const auto path = folder.file("s.kvsess");
    SessionWriter::save(path, fileMetadata(), events);
    const Timeline memory = timelineOf(events, Timeline::kDefaultKeyframeInterval);
    SessionContents contents;
    const Timeline file = Timeline::openFile(path, contents, 4);
    struct Case {
        std::int64_t step;
        std::int64_t seqLength;
    };
    const Case cases[] = {{0, 20},    {1, 21},    {31, 51},   {32, 52},   {33, 53},   {255, 275},
                          {256, 276}, {257, 277}, {511, 531}, {699, 719}, {700, 720}, {3, 23}};
    for (const Case& c : cases) {
        const StepState state = file.stateAt(c.step);
        EXPECT_EQ(state, memory.stateAt(c.step)) << "step " << c.step;
        ASSERT_EQ(state.layers.size(), 3u);
        EXPECT_EQ(state.layers[0].seqLength, c.seqLength) << "step " << c.step;
        EXPECT_EQ(state.step, c.step);
    }
    EXPECT_THROW((void)file.stateAt(701), std::out_of_range);
}

TEST(TimelineTest, FileBackedFrameCacheEvictsAndDecodesAgainIdentically) {
    const std::vector<Event> events = recordSession(irregularSession(5));
    TemporaryFolder folder;
    const auto path = folder.file("s.kvsess");
    SessionWriter::save(path, fileMetadata(), events);
    SessionContents contents;
    const Timeline file = Timeline::openFile(path, contents, 4);
    const StepFrameCache& cache = *file.frameCache();
    EXPECT_EQ(cache.size(), 0u) << "opening decodes nothing it keeps";
    const std::vector<Event> first = eventsOf(file.eventsOfStep(1));
    ASSERT_FALSE(first.empty());
    EXPECT_EQ(cache.decodes(), 1u);
    (void)file.eventsOfStep(1);
    EXPECT_EQ(cache.decodes(), 1u) << "a cached step is not decoded again";
    std::uint64_t decoded = cache.decodes();
    for (std::int64_t step = 2; step < 30; ++step) {
        decoded += file.eventsOfStep(step).empty() ? 0 : 1; // empty steps have no chunk to decode
    }
    EXPECT_EQ(cache.decodes(), decoded);
    EXPECT_EQ(cache.size(), 4u) << "bounded: the oldest steps were dropped";
    const StepEvents held = file.eventsOfStep(29); // a held frame outlives its eviction
    EXPECT_EQ(eventsOf(file.eventsOfStep(1)), first) << "step 1 was evicted and decodes to the same events";
    EXPECT_EQ(cache.decodes(), decoded + 1);
    for (std::int64_t step = 30; step < 60; ++step) {
        (void)file.eventsOfStep(step);
    }
    EXPECT_EQ(eventsOf(held), eventsOf(timelineOf(events, 32).eventsOfStep(29)));
}

TEST(TimelineTest, FileDamagedAfterOpeningIsReportedWhenReachedAndDoesNotCrash) {
    SyntheticSessionOptions options;
    options.layers = 4;
    options.tokens = 300;
    const std::vector<Event> events = recordSession(options);
    TemporaryFolder folder;
    const auto path = folder.file("s.kvsess");
    SessionWriter::save(path, fileMetadata(), events);
    SessionContents contents;
    const Timeline file = Timeline::openFile(path, contents, 2);
    const StepState early = file.stateAt(5);
    // Overwrite bytes in the middle of a late step's frame (the file is rewritten under the viewer).
    const auto size = std::filesystem::file_size(path);
    {
        std::fstream out(path, std::ios::in | std::ios::out | std::ios::binary);
        out.seekp(static_cast<std::streamoff>(size * 7 / 8));
        out.write(std::string(256, '\x5a').data(), 256); // longer than a step chunk of 4 layers
    }
    EXPECT_EQ(file.stateAt(5), early) << "steps before the damage still read";
    bool reported = false;
    for (std::int64_t step = 0; step < file.stepCount() && !reported; ++step) {
        try {
            (void)file.eventsOfStep(step);
        } catch (const SessionError& error) {
            reported = true;
            const std::string message = error.what();
            EXPECT_NE(message.find(path.string()), std::string::npos) << message;
            EXPECT_NE(message.find("at byte"), std::string::npos) << message;
            EXPECT_NE(message.find("open it again"), std::string::npos) << message;
            EXPECT_GT(step, file.stepCount() / 2) << "the damage is deep in the file";
        }
    }
    EXPECT_TRUE(reported);
    // Truncated under the viewer: a short read, reported, never a crash (a memory map would SIGBUS here).
    std::filesystem::resize_file(path, size / 3);
    EXPECT_THROW((void)file.stateAt(file.stepCount() - 2), SessionError);
    EXPECT_EQ(file.stateAt(5), early) << "cached and early steps are unaffected";
}

TEST(TimelineTest, FileDamagedBeforeOpeningOpensItsIntactSteps) {
    SyntheticSessionOptions options;
    options.layers = 2;
    options.tokens = 100;
    const std::vector<Event> events = recordSession(options);
    TemporaryFolder folder;
    const auto path = folder.file("s.kvsess");
    SessionWriter::save(path, fileMetadata(), events);
    std::filesystem::resize_file(path, std::filesystem::file_size(path) / 2);
    const SessionContents read = SessionReader::read(path);
    SessionContents contents;
    const Timeline file = Timeline::openFile(path, contents);
    EXPECT_EQ(contents.damage, read.damage);
    EXPECT_FALSE(contents.damage.empty());
    EXPECT_EQ(file.stepCount(), read.intactSteps);
    const Timeline memory = timelineOf(read.events, Timeline::kDefaultKeyframeInterval);
    EXPECT_EQ(file.stateAt(file.stepCount() - 1), memory.stateAt(memory.stepCount() - 1));
    EXPECT_THROW((void)Timeline::openFile(folder.file("missing.kvsess"), contents), SessionError);
}

// ---- Format 1.6: a finished file holds its overview (keyframes, chart columns, retained events), and
// opening reads that instead of decoding every frame.

namespace {

/// CRC-32C, bit by bit (an oracle independent of the library's table-driven one).
std::uint32_t crc32c(const std::vector<char>& bytes, std::size_t begin, std::size_t end) {
    std::uint32_t crc = 0xFFFFFFFFu;
    for (std::size_t i = begin; i < end; ++i) {
        crc ^= static_cast<std::uint8_t>(bytes[i]);
        for (int bit = 0; bit < 8; ++bit) {
            crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
        }
    }
    return ~crc;
}

std::vector<char> fileBytesInTimeline(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

template <typename T> T readAt(const std::vector<char>& bytes, std::size_t at) {
    T value{};
    std::memcpy(&value, bytes.data() + at, sizeof(T));
    return value;
}

/// Frames of the file (offset, type), from the header to the index.
std::vector<std::pair<std::size_t, std::uint32_t>> framesOf(const std::vector<char>& bytes) {
    std::vector<std::pair<std::size_t, std::uint32_t>> frames;
    const std::size_t indexAt = readAt<std::uint64_t>(bytes, bytes.size() - 16);
    for (std::size_t at = readAt<std::uint32_t>(bytes, 12); at < indexAt;
         at += 24 + readAt<std::uint64_t>(bytes, at + 8) + 4) {
        frames.emplace_back(at, readAt<std::uint32_t>(bytes, at));
    }
    return frames;
}

void writeBytes(const std::filesystem::path& path, const std::vector<char>& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// The checksum of the chunk at `at` made to match its bytes again.
void fixChunkChecksum(std::vector<char>& bytes, std::size_t at) {
    const auto stored = readAt<std::uint64_t>(bytes, at + 8);
    const std::uint32_t crc = crc32c(bytes, at, at + 24 + stored);
    std::memcpy(bytes.data() + at + 24 + stored, &crc, 4);
}

/// The Step chunk `which` (counting from 1) scrambled, its checksum made to match again: the pass stops there,
/// a reader of the overview does not read it.
void scrambleStepChunk(std::vector<char>& bytes, int which) {
    int stepChunks = 0;
    for (const auto& [at, type] : framesOf(bytes)) {
        if (type == 1 && ++stepChunks == which) {
            std::memset(bytes.data() + at + 24, 0x5A, readAt<std::uint64_t>(bytes, at + 8));
            fixChunkChecksum(bytes, at);
            return;
        }
    }
}

/// The first chunk of type `type` given the type `unknown` (one no reader knows), its checksum made to match.
void retypeFirstChunk(std::vector<char>& bytes, std::uint32_t type, std::uint32_t unknown) {
    for (const auto& [at, each] : framesOf(bytes)) {
        if (each == type) {
            std::memcpy(bytes.data() + at, &unknown, 4);
            fixChunkChecksum(bytes, at);
            return;
        }
    }
}

/// How many chunks of `type` the file holds between its header and its index.
int chunksOfType(const std::filesystem::path& path, std::uint32_t type) {
    const auto frames = framesOf(fileBytesInTimeline(path));
    return static_cast<int>(std::count_if(frames.begin(), frames.end(), [type](const auto& frame) { return frame.second == type; }));
}

/// The header's minor version set to `minor`, its checksum made to match.
void setMinor(std::vector<char>& bytes, std::uint16_t minor) {
    std::memcpy(bytes.data() + 10, &minor, 2);
    const std::size_t headerLength = readAt<std::uint32_t>(bytes, 12);
    const std::uint32_t crc = crc32c(bytes, 0, headerLength - 4);
    std::memcpy(bytes.data() + headerLength - 4, &crc, 4);
}

std::vector<TimedSpan> spansOf(const Timeline& timeline) {
    const auto spans = timeline.timedSpans().spans();
    return std::vector<TimedSpan>(spans.begin(), spans.end());
}

} // namespace

TEST(TimelineTest, FileBackedFromTheOverviewEqualsInMemoryEverywhere) {
    // As FileBackedEqualsInMemoryEverywhere, at the writer's keyframe interval: the overview is read.
    const std::vector<Event> events = recordSession(irregularSession(3));
    TemporaryFolder folder;
    const auto path = folder.file("s.kvsess");
    SessionWriter::save(path, fileMetadata(), events);
    const Timeline memory = timelineOf(events, Timeline::kDefaultKeyframeInterval);
    SessionContents contents;
    const Timeline file = Timeline::openFile(path, contents, 8);
    const SessionContents read = SessionReader::read(path);
    EXPECT_TRUE(contents.complete) << contents.damage;
    EXPECT_EQ(contents.version, FormatVersion{}) << "the writer's version: 1.6 or later holds the overview";
    EXPECT_EQ(contents.metadata, read.metadata);
    EXPECT_EQ(contents.intactSteps, read.intactSteps);
    EXPECT_EQ(contents.payloadBytes, read.payloadBytes);
    EXPECT_EQ(contents.fileBytes, read.fileBytes);
    EXPECT_EQ(read.skippedChunks, 0) << "the pass knows the overview's chunks";
    ASSERT_EQ(file.stepCount(), memory.stepCount());
    EXPECT_EQ(file.layerCount(), memory.layerCount());
    EXPECT_EQ(file.eventCount(), memory.eventCount());
    EXPECT_EQ(file.latestState(), memory.latestState());
    for (std::int64_t step = 0; step < memory.stepCount(); ++step) {
        ASSERT_EQ(file.stateAt(step), memory.stateAt(step)) << "step " << step;
        ASSERT_EQ(eventsOf(file.eventsOfStep(step)), eventsOf(memory.eventsOfStep(step))) << "step " << step;
    }
    EXPECT_EQ(std::vector<Event>(file.retainedEvents().begin(), file.retainedEvents().end()),
              std::vector<Event>(memory.retainedEvents().begin(), memory.retainedEvents().end()));
    const auto fileSpans = file.timedSpans().spans();
    const auto memorySpans = memory.timedSpans().spans();
    EXPECT_EQ(std::vector<TimedSpan>(fileSpans.begin(), fileSpans.end()),
              std::vector<TimedSpan>(memorySpans.begin(), memorySpans.end()));
    expectSameSeries(file, memory, 0, memory.stepCount());
}

TEST(TimelineTest, ColumnsWrittenInBlocksOpenAsTheOverviewHeldThem) {
    // Format 1.7: the writer takes the chart columns off in blocks as the run goes (here of 64 steps, in
    // the file 4096) instead of holding them till finish(). A block is taken when a step begins with 64
    // rows waiting: for N steps, (N - 1) / 64 blocks, and the overview holds the rest.
    SyntheticSessionOptions options = irregularSession(5);
    options.tokens = 300;
    const std::vector<Event> events = recordSession(options);
    TemporaryFolder folder;
    const auto write = [&](const std::filesystem::path& path, std::int64_t blockSteps) {
        SessionWriter writer(path, fileMetadata());
        writer.setColumnBlockSteps(blockSteps);
        for (const Event& event : events) {
            writer.emit(event);
        }
        writer.finish();
    };
    const auto blocked = folder.file("blocked.kvsess");
    const auto whole = folder.file("whole.kvsess");
    write(blocked, 64);
    write(whole, 0);
    const Timeline memory = timelineOf(events, Timeline::kDefaultKeyframeInterval);
    ASSERT_GT(memory.stepCount(), 256);
    EXPECT_EQ(chunksOfType(blocked, 6), (memory.stepCount() - 1) / 64);
    EXPECT_EQ(chunksOfType(whole, 6), 0);
    EXPECT_EQ(chunksOfType(blocked, 4), 1);
    for (const auto& path : {blocked, whole}) {
        SessionContents contents;
        const Timeline file = Timeline::openFile(path, contents);
        const SessionContents read = SessionReader::read(path);
        EXPECT_TRUE(contents.complete) << contents.damage;
        EXPECT_EQ(read.skippedChunks, 0) << "the pass knows the columns chunks";
        EXPECT_EQ(read.events, events);
        ASSERT_EQ(file.stepCount(), memory.stepCount());
        EXPECT_EQ(file.latestState(), memory.latestState());
        for (std::int64_t step = 0; step < memory.stepCount(); step += 37) {
            ASSERT_EQ(file.stateAt(step), memory.stateAt(step)) << "step " << step;
        }
        expectSameSeries(file, memory, 0, memory.stepCount(), path.filename().string());
    }
    // Read from the overview and its blocks, not through the pass: with a Step chunk's payload scrambled
    // (checksum matching) the pass stops there, the overview opens the whole session.
    {
        std::vector<char> bytes = fileBytesInTimeline(blocked);
        scrambleStepChunk(bytes, 10);
        const auto scrambled = folder.file("scrambled.kvsess");
        writeBytes(scrambled, bytes);
        EXPECT_FALSE(SessionReader::read(scrambled).complete);
        SessionContents contents;
        const Timeline file = Timeline::openFile(scrambled, contents);
        EXPECT_TRUE(contents.complete) << contents.damage;
        EXPECT_EQ(file.stepCount(), memory.stepCount());
        EXPECT_EQ(file.latestState(), memory.latestState());
        const auto a = file.seriesOf(0, SeriesField::SeqLength, 0, memory.stepCount(), 100000);
        const auto b = memory.seriesOf(0, SeriesField::SeqLength, 0, memory.stepCount(), 100000);
        ASSERT_EQ(a.size(), b.size());
        for (std::size_t i = 0; i < a.size(); ++i) {
            ASSERT_EQ(a[i].value, b[i].value) << "step " << i;
        }
    }
    // A reader that does not know the blocks (1.6) finds the overview's columns short and opens the file
    // through the pass; the same file with its blocks' type changed to an unknown one does the same here.
    std::vector<char> bytes = fileBytesInTimeline(blocked);
    retypeFirstChunk(bytes, 6, 99);
    const auto renamed = folder.file("renamed.kvsess");
    writeBytes(renamed, bytes);
    SessionContents contents;
    const Timeline file = Timeline::openFile(renamed, contents);
    EXPECT_TRUE(contents.complete) << contents.damage;
    EXPECT_EQ(contents.skippedChunks, 1) << "opened through the pass, which skips the unknown chunk";
    ASSERT_EQ(file.stepCount(), memory.stepCount());
    EXPECT_EQ(file.stateAt(150), memory.stateAt(150));
}

TEST(TimelineTest, OpeningAFinishedFileReadsItsOverviewNotItsFrames) {
    // A step chunk's payload scrambled and its checksum made to match again: the pass cannot decode it (it
    // stops there), the overview does not need to (the step fails only when it is shown).
    SyntheticSessionOptions options;
    options.layers = 2;
    options.tokens = 100;
    const std::vector<Event> events = recordSession(options);
    TemporaryFolder folder;
    const auto path = folder.file("s.kvsess");
    SessionWriter::save(path, fileMetadata(), events);
    std::vector<char> bytes = fileBytesInTimeline(path);
    scrambleStepChunk(bytes, 60); // the 60th Step chunk
    writeBytes(path, bytes);
    const SessionContents read = SessionReader::read(path);
    EXPECT_FALSE(read.complete);
    EXPECT_LT(read.intactSteps, 100);
    SessionContents contents;
    const Timeline file = Timeline::openFile(path, contents);
    EXPECT_TRUE(contents.complete) << contents.damage;
    EXPECT_TRUE(contents.damage.empty());
    const Timeline memory = timelineOf(events, Timeline::kDefaultKeyframeInterval);
    EXPECT_EQ(file.stepCount(), memory.stepCount());
    EXPECT_EQ(file.latestState(), memory.latestState());
    EXPECT_EQ(file.stateAt(40), memory.stateAt(40));
    EXPECT_EQ(file.eventCount(), memory.eventCount());
    int unreadable = 0;
    for (std::int64_t step = 0; step < file.stepCount(); ++step) {
        try {
            (void)file.eventsOfStep(step);
        } catch (const SessionError&) {
            ++unreadable;
        }
    }
    EXPECT_EQ(unreadable, 1) << "the scrambled step fails when it is shown, and only it";
    // A keyframe interval other than the file's: the pass, which finds the damage.
    SessionContents passed;
    const Timeline other = Timeline::openFile(path, passed, 8, 16);
    EXPECT_EQ(passed.damage, read.damage);
    EXPECT_EQ(other.stepCount(), read.intactSteps);
}

TEST(TimelineTest, AnOverviewOfManyMegabytesIsDecodedAsItIsReadAndChecked) {
    // An offloaded session with a channel error report per step (1 KB each): ~12 MB of overview raw, read and
    // decompressed a few MB at a time; its 288,000 transfers and compute spans are in Spans chunks (1.9) of
    // 65536 and more, read back in the order they came.
    SyntheticSessionOptions options;
    options.layers = 8;
    options.tokens = 12000;
    options.offload = true;
    std::vector<Event> events;
    for (const Event& event : recordSession(options)) {
        events.push_back(event);
        if (event.kind() == EventKind::StepBegin) {
            ChannelErrorEvent report{2, event.step + 1, {}, {}, {}, {}};
            for (auto* list : {&report.keyError, &report.keySize, &report.valueError, &report.valueSize}) {
                for (int channel = 0; channel < 64; ++channel) {
                    list->push_back(static_cast<float>((event.step * 7 + channel + list->size()) % 97) * 0.01F);
                }
            }
            events.push_back(Event{event.step, 1, 0, report});
        }
    }
    TemporaryFolder folder;
    const auto path = folder.file("offloaded.kvsess");
    SessionWriter::save(path, fileMetadata(), events);
    const Timeline memory = timelineOf(events, Timeline::kDefaultKeyframeInterval);
    SessionContents contents;
    const Timeline file = Timeline::openFile(path, contents);
    EXPECT_TRUE(contents.complete) << contents.damage;
    ASSERT_EQ(file.stepCount(), memory.stepCount());
    EXPECT_EQ(file.latestState(), memory.latestState());
    EXPECT_EQ(file.stateAt(5000), memory.stateAt(5000));
    const auto spanEvents = std::count_if(events.begin(), events.end(),
                                          [](const Event& event) { return TimedSpans::accepts(event.kind()); });
    EXPECT_EQ(memory.timedSpans().size(), static_cast<std::size_t>(spanEvents));
    EXPECT_EQ(spansOf(file), spansOf(memory));
    EXPECT_EQ(std::vector<Event>(file.retainedEvents().begin(), file.retainedEvents().end()),
              std::vector<Event>(memory.retainedEvents().begin(), memory.retainedEvents().end()));
    EXPECT_GT(memory.retainedEvents().size(), 12000U);

    const std::vector<char> bytes = fileBytesInTimeline(path);
    std::size_t overviewAt = 0;
    std::vector<std::size_t> spanChunks;
    for (const auto& [at, type] : framesOf(bytes)) {
        overviewAt = type == 4 ? at : overviewAt;
        if (type == 7) {
            spanChunks.push_back(at);
        }
    }
    ASSERT_GT(readAt<std::uint64_t>(bytes, overviewAt + 16), 8U << 20) << "raw: more than the stream holds at a time";
    // Blocks are taken at a step chunk's start once 65536 spans wait, the rest at the end.
    ASSERT_EQ(spanChunks.size(), 5U);
    std::uint64_t raw = 0;
    for (const std::size_t at : spanChunks) {
        raw += readAt<std::uint64_t>(bytes, at + 16);
    }
    EXPECT_EQ(raw, spanChunks.size() * 12 + memory.timedSpans().size() * 23) << "23 bytes a span, raw";

    // A byte flipped in the overview's stored payload, or in a Spans chunk's: their checksums (the overview's
    // checked as it is read) send the file through the pass, which reports the damage as reading the whole file
    // does, and still finds every transfer in the step chunks before it.
    for (const std::size_t at : {overviewAt, spanChunks[2]}) {
        std::vector<char> damaged = bytes;
        const auto stored = readAt<std::uint64_t>(damaged, at + 8);
        damaged[at + 24 + stored - 100] = static_cast<char>(damaged[at + 24 + stored - 100] ^ 0x10);
        const auto damagedPath = folder.file("damaged.kvsess");
        writeBytes(damagedPath, damaged);
        const SessionContents read = SessionReader::read(damagedPath);
        EXPECT_FALSE(read.damage.empty());
        SessionContents opened;
        const Timeline passed = Timeline::openFile(damagedPath, opened);
        EXPECT_EQ(opened.damage, read.damage);
        ASSERT_EQ(passed.stepCount(), read.intactSteps);
        EXPECT_EQ(passed.stateAt(read.intactSteps / 2), memory.stateAt(read.intactSteps / 2));
        const std::vector<TimedSpan> all = spansOf(memory);
        const std::vector<TimedSpan> before = spansOf(passed);
        ASSERT_FALSE(before.empty());
        EXPECT_TRUE(std::equal(before.begin(), before.end(), all.begin()));
    }
}

TEST(TimelineTest, SpansBlocksThatDisagreeSendTheFileThroughThePass) {
    // 1.9's overview ends with the count of spans its Spans chunks hold. A file read as 1.8 (its minor set back)
    // has bytes after the retained events, as a reader of 1.8 finds them: it opens through the pass, not from an
    // overview without its transfers; a Spans chunk dropped from the walk (its type made unknown) likewise. The
    // pass stops at a scrambled step chunk, which the overview's open would not read: so each open below that is
    // incomplete went through the pass.
    SyntheticSessionOptions options;
    options.layers = 4;
    options.tokens = 12000;
    options.offload = true;
    const std::vector<Event> events = recordSession(options);
    TemporaryFolder folder;
    const auto path = folder.file("offloaded.kvsess");
    SessionWriter::save(path, fileMetadata(), events);
    std::vector<char> bytes = fileBytesInTimeline(path);
    scrambleStepChunk(bytes, 9000);
    const Timeline memory = timelineOf(events, Timeline::kDefaultKeyframeInterval);
    const auto opened = [&](const std::vector<char>& variant) {
        const auto variantPath = folder.file("variant.kvsess");
        writeBytes(variantPath, variant);
        SessionContents contents;
        Timeline timeline = Timeline::openFile(variantPath, contents);
        return std::pair{contents, std::move(timeline)};
    };
    {
        const auto [contents, timeline] = opened(bytes);
        EXPECT_TRUE(contents.complete) << "from the overview: " << contents.damage;
        EXPECT_EQ(spansOf(timeline), spansOf(memory));
    }
    std::vector<char> asOlder = bytes;
    setMinor(asOlder, 8);
    EXPECT_FALSE(opened(asOlder).first.complete);
    std::vector<char> blockDropped = bytes;
    retypeFirstChunk(blockDropped, 7, 99);
    EXPECT_FALSE(opened(blockDropped).first.complete);
}

TEST(TimelineTest, A18FileOpensFromItsOverviewWithItsTransfers) {
    // Format 1.8 kept transfers and compute spans among the overview's retained events: such a file still opens
    // from its overview (the pass would stop at the scrambled step chunk) with the spans the pass finds.
    const auto golden = std::filesystem::path(KVSCOPE_TEST_DATA_DIR) / "sessions" / "golden-1.8-offloaded.kvsess";
    const SessionContents read = SessionReader::read(golden);
    ASSERT_EQ(read.version, (FormatVersion{1, 8}));
    ASSERT_TRUE(read.complete) << read.damage;
    const Timeline memory = timelineOf(read.events, Timeline::kDefaultKeyframeInterval);
    ASSERT_GT(memory.timedSpans().size(), 500U);
    std::vector<char> bytes = fileBytesInTimeline(golden);
    for (const auto& [at, type] : framesOf(bytes)) {
        ASSERT_NE(type, 7U) << "1.8 has no Spans chunks";
    }
    scrambleStepChunk(bytes, 50);
    TemporaryFolder folder;
    const auto path = folder.file("golden.kvsess");
    writeBytes(path, bytes);
    SessionContents contents;
    const Timeline file = Timeline::openFile(path, contents);
    EXPECT_TRUE(contents.complete) << contents.damage;
    ASSERT_EQ(file.stepCount(), memory.stepCount());
    EXPECT_EQ(file.latestState(), memory.latestState());
    EXPECT_EQ(spansOf(file), spansOf(memory));
    EXPECT_EQ(std::vector<Event>(file.retainedEvents().begin(), file.retainedEvents().end()),
              std::vector<Event>(memory.retainedEvents().begin(), memory.retainedEvents().end()));
}

TEST(TimelineTest, OlderVersionsAndFilesWithoutAnOverviewOpenThroughThePass) {
    // The golden files of every older version, and a serving session (whose pool the overview cannot hold).
    for (const char* name : {"golden-1.0", "golden-1.1", "golden-1.2", "golden-1.3", "golden-1.4"}) {
        const auto path =
            std::filesystem::path(KVSCOPE_TEST_DATA_DIR) / "sessions" / (std::string(name) + ".kvsess");
        const SessionContents read = SessionReader::read(path);
        SessionContents contents;
        const Timeline file = Timeline::openFile(path, contents);
        EXPECT_EQ(contents.version, read.version) << name;
        EXPECT_EQ(contents.damage, read.damage) << name;
        const Timeline memory = timelineOf(read.events, Timeline::kDefaultKeyframeInterval);
        ASSERT_EQ(file.stepCount(), memory.stepCount()) << name;
        for (std::int64_t step = 0; step < memory.stepCount(); ++step) {
            ASSERT_EQ(file.stateAt(step), memory.stateAt(step)) << name << " step " << step;
        }
    }
    const auto golden = std::filesystem::path(KVSCOPE_TEST_DATA_DIR) / "sessions" / "golden-1.4.kvsess";
    const SessionContents serving = SessionReader::read(golden);
    TemporaryFolder folder;
    const auto path = folder.file("serving.kvsess");
    SessionWriter::save(path, serving.metadata, serving.events);
    EXPECT_EQ(chunksOfType(path, 4), 0) << "a serving session is written without an overview";
    SessionContents contents;
    const Timeline file = Timeline::openFile(path, contents);
    EXPECT_TRUE(contents.complete);
    const Timeline memory = timelineOf(serving.events, Timeline::kDefaultKeyframeInterval);
    ASSERT_EQ(file.stepCount(), memory.stepCount());
    EXPECT_EQ(file.latestState(), memory.latestState());
}

TEST(TimelineTest, FileBackedTimelineIsReadOnly) {
    TemporaryFolder folder;
    const auto path = folder.file("s.kvsess");
    SessionWriter::save(path, fileMetadata(), recordSession(irregularSession(1)));
    SessionContents contents;
    Timeline file = Timeline::openFile(path, contents);
    EXPECT_THROW(file.emit(makeEvent(500, 0, ResetEvent{})), std::logic_error);
    file.clear();
    EXPECT_FALSE(file.fileBacked());
    EXPECT_EQ(file.stepCount(), 0);
}
