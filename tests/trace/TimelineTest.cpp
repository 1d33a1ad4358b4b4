// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/trace/Timeline.h"

#include "TraceTestHelpers.h"
#include "kvscope/trace/RecordingSink.h"
#include "kvscope/synthetic/SyntheticSession.h"

#include <algorithm>
#include <gtest/gtest.h>
#include <stdexcept>

using namespace kvscope::trace;
using namespace kvscope::synthetic;
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
        {SeriesField::SeqLength, 11},      {SeriesField::StoredTokens, 10},
        {SeriesField::KvLength, 12},       {SeriesField::ResidualTokens, 3},
        {SeriesField::QuantizedTokens, 8}, {SeriesField::BytesDeviceFullPrecision, 500},
        {SeriesField::BytesDeviceQuantized, 40}, {SeriesField::BytesHost, 7},
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

constexpr SeriesField kAllFields[] = {
    SeriesField::SeqLength,
    SeriesField::StoredTokens,
    SeriesField::KvLength,
    SeriesField::ResidualTokens,
    SeriesField::QuantizedTokens,
    SeriesField::BytesDeviceFullPrecision,
    SeriesField::BytesDeviceQuantized,
    SeriesField::BytesHost,
    SeriesField::WallNs,
};

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
