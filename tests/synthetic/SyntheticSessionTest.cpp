// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/synthetic/SyntheticSession.h"

#include "kvscope/trace/RecordingSink.h"
#include "kvscope/trace/StateReducer.h"

#include <gtest/gtest.h>
#include <map>

using namespace kvscope::trace;
using namespace kvscope::synthetic;

namespace {

std::vector<Event> record(const SyntheticSessionOptions& options) {
    RecordingSink sink;
    SyntheticSession::generate(options, sink);
    return sink.takeEvents();
}

SyntheticSessionOptions smallOptions() {
    SyntheticSessionOptions options;
    options.layers = 8;
    options.tokens = 600;
    options.promptTokens = 64;
    options.window = 256;
    options.residualLength = 128;
    return options;
}

} // namespace

TEST(SyntheticSessionTest, DeterministicPerSeed) {
    SyntheticSessionOptions options = smallOptions();
    options.irregular = true;
    EXPECT_EQ(record(options), record(options));
    SyntheticSessionOptions other = options;
    other.seed = 2;
    EXPECT_NE(record(options), record(other));
}

TEST(SyntheticSessionTest, LayerKindsFollowTheirPeriods) {
    SyntheticSessionOptions options;
    options.slidingEvery = 4;
    options.quantizedEvery = 4;
    options.staticEvery = 4;
    EXPECT_EQ(SyntheticSession::kindOfLayer(options, 0), LayerKind::Dynamic);
    EXPECT_EQ(SyntheticSession::kindOfLayer(options, 1), LayerKind::DynamicSlidingWindow);
    EXPECT_EQ(SyntheticSession::kindOfLayer(options, 2), LayerKind::Quantized);
    EXPECT_EQ(SyntheticSession::kindOfLayer(options, 3), LayerKind::Static);
    EXPECT_EQ(SyntheticSession::kindOfLayer(options, 5), LayerKind::DynamicSlidingWindow);
    options.slidingEvery = options.quantizedEvery = options.staticEvery = 0;
    EXPECT_EQ(SyntheticSession::kindOfLayer(options, 1), LayerKind::Dynamic);
}

TEST(SyntheticSessionTest, EveryStepIsBracketedAndUpdatesEveryLayerOnce) {
    const SyntheticSessionOptions options = smallOptions();
    const std::vector<Event> events = record(options);
    ASSERT_FALSE(events.empty());
    EXPECT_LE(events.size(), SyntheticSession::estimateEventCount(options));

    std::map<std::int64_t, std::vector<const Event*>> bySteps;
    for (std::size_t i = 0; i < events.size(); ++i) {
        EXPECT_EQ(events[i].sequence, i);
        if (i > 0) {
            EXPECT_LE(events[i - 1].step, events[i].step);
        }
        bySteps[events[i].step].push_back(&events[i]);
    }
    ASSERT_EQ(bySteps.size(), static_cast<std::size_t>(options.tokens + 1));
    for (const auto& [step, stepEvents] : bySteps) {
        EXPECT_EQ(stepEvents.front()->kind(), EventKind::StepBegin) << step;
        std::map<std::int32_t, int> updates;
        std::map<std::int32_t, int> masks;
        int ends = 0;
        int memories = 0;
        for (const Event* event : stepEvents) {
            if (event->kind() == EventKind::Update) {
                ++updates[event->layer];
                EXPECT_EQ(std::get<UpdateEvent>(event->payload).tokensIn,
                          step == 0 ? options.promptTokens : 1);
            }
            masks[event->layer] += event->kind() == EventKind::MaskSizes ? 1 : 0;
            ends += event->kind() == EventKind::StepEnd ? 1 : 0;
            memories += event->kind() == EventKind::Memory && event->layer == -1 ? 1 : 0;
        }
        EXPECT_EQ(ends, 1);
        EXPECT_EQ(memories, 1);
        ASSERT_EQ(updates.size(), static_cast<std::size_t>(options.layers)) << step;
        for (std::int32_t layer = 0; layer < options.layers; ++layer) {
            EXPECT_EQ(updates[layer], 1);
            EXPECT_EQ(masks[layer], 1);
        }
    }
}

TEST(SyntheticSessionTest, SlidingLayersSlideAndQuantizedLayersFlushOnSchedule) {
    const SyntheticSessionOptions options = smallOptions();
    const std::vector<Event> events = record(options);
    StepState state;
    std::map<std::int32_t, std::vector<std::int64_t>> flushSteps;
    std::int64_t slides = 0;
    for (const Event& event : events) {
        StateReducer::apply(state, event);
        if (event.kind() == EventKind::QuantizeFlush)
            flushSteps[event.layer].push_back(event.step);
        if (event.kind() == EventKind::WindowSlide) {
            ++slides;
            EXPECT_EQ(SyntheticSession::kindOfLayer(options, event.layer), LayerKind::DynamicSlidingWindow);
        }
    }
    // Sliding layer 1: prompt 64 + 600 tokens through a 256 window.
    const LayerState& sliding = state.layers.at(1);
    EXPECT_EQ(sliding.kind, LayerKind::DynamicSlidingWindow);
    EXPECT_EQ(sliding.seqLength, 664);
    EXPECT_EQ(sliding.storedTokens, 256);
    EXPECT_EQ(sliding.windowStart, 408);
    EXPECT_EQ(sliding.windowEnd, 664);
    EXPECT_EQ(slides, 664 - 256);

    // Quantized layer 4: all of the prompt at step 0, then every 128 steps.
    ASSERT_EQ(SyntheticSession::kindOfLayer(options, 4), LayerKind::Quantized);
    EXPECT_EQ(flushSteps[4], (std::vector<std::int64_t>{0, 128, 256, 384, 512}));
    const LayerState& quantized = state.layers.at(4);
    EXPECT_EQ(quantized.quantizedTokens, 64 + 512);
    EXPECT_EQ(quantized.residualTokens, 600 - 512);
    EXPECT_GT(state.memoryDeviceQuantized, 0);
    EXPECT_GT(state.memoryDeviceFullPrecision, 0);
    EXPECT_EQ(state.memoryHost, 0);
}

TEST(SyntheticSessionTest, OffloadedLayersEndOnTheHost) {
    SyntheticSessionOptions options = smallOptions();
    options.offload = true;
    options.tokens = 10;
    StepState state;
    std::int64_t computeLaneEnd = 0;  // computes and offloads share the compute lane
    std::int64_t prefetchLaneEnd = 0;
    std::map<std::int32_t, std::int64_t> prefetchEnd;
    std::int64_t computes = 0;
    for (const Event& event : record(options)) {
        StateReducer::apply(state, event);
        if (const auto* transfer = std::get_if<TransferEvent>(&event.payload)) {
            std::int64_t& laneEnd = transfer->lane == TransferLane::Prefetch ? prefetchLaneEnd : computeLaneEnd;
            EXPECT_GE(transfer->beginNs, laneEnd);
            EXPECT_GT(transfer->endNs, transfer->beginNs);
            EXPECT_EQ(transfer->timing, TimingSource::Modeled);
            laneEnd = transfer->endNs;
            if (transfer->direction == TransferDirection::Prefetch) {
                prefetchEnd[event.layer] = transfer->endNs;
            }
        } else if (const auto* compute = std::get_if<ComputeEvent>(&event.payload)) {
            ++computes;
            EXPECT_GE(compute->beginNs, computeLaneEnd);
            EXPECT_GE(compute->beginNs, prefetchEnd[event.layer]) << "an update waits for its layer's prefetch";
            EXPECT_GT(compute->endNs, compute->beginNs);
            computeLaneEnd = compute->endNs;
        }
    }
    EXPECT_EQ(computes, options.layers * (options.tokens + 1));
    EXPECT_GT(prefetchLaneEnd, 0);
    EXPECT_EQ(state.layers.at(0).residency, Residency::Device);
    for (std::size_t layer = 1; layer < state.layers.size(); ++layer) {
        EXPECT_EQ(state.layers[layer].residency, Residency::Host) << layer;
        EXPECT_GT(state.layers[layer].bytesHost, 0);
        EXPECT_EQ(state.layers[layer].bytesDevice, 0);
    }
    EXPECT_GT(state.memoryHost, 0);
}
