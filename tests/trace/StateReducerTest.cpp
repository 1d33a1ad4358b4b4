// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/trace/StateReducer.h"

#include "TraceTestHelpers.h"

#include <gtest/gtest.h>
#include <limits>
#include <vector>

using namespace kvscope::trace;
using kvscope::trace::testing::makeEvent;

namespace {

LayerState folded(LayerState layer, std::int64_t step, EventPayload payload) {
    StateReducer::apply(layer, makeEvent(step, 0, std::move(payload)));
    return layer;
}

LayerState layerOfKind(LayerKind kind) {
    LayerState layer;
    layer.kind = kind;
    return layer;
}

} // namespace

TEST(StateReducerTest, UpdateSetsSizesKindAndDeviceBytes) {
    const LayerState layer = folded(LayerState{}, 4,
                                    UpdateEvent{.tokensIn = 1,
                                                .seqLength = 10,
                                                .storedTokens = 10,
                                                .capacity = 64,
                                                .returnedTokens = 64,
                                                .bytes = 40960,
                                                .layerType = LayerKind::Static});
    EXPECT_TRUE(layer.initialized);
    EXPECT_EQ(layer.kind, LayerKind::Static);
    EXPECT_EQ(layer.seqLength, 10);
    EXPECT_EQ(layer.storedTokens, 10);
    EXPECT_EQ(layer.capacity, 64);
    EXPECT_EQ(layer.returnedTokens, 64);
    EXPECT_EQ(layer.bytesDevice, 40960);
    EXPECT_EQ(layer.lastUpdateStep, 4);
    // Not sliding, not quantized: window and residual untouched.
    EXPECT_EQ(layer.windowStart, 0);
    EXPECT_EQ(layer.windowEnd, 0);
    EXPECT_EQ(layer.residualTokens, 0);
}

TEST(StateReducerTest, UpdateOfSlidingLayerPlacesTheWindow) {
    for (LayerKind kind : {LayerKind::DynamicSlidingWindow, LayerKind::StaticSlidingWindow}) {
        const LayerState layer = folded(
            LayerState{}, 1,
            UpdateEvent{
                .tokensIn = 1, .seqLength = 300, .storedTokens = 256, .capacity = 256, .layerType = kind});
        EXPECT_EQ(layer.windowStart, 44) << toString(kind);
        EXPECT_EQ(layer.windowEnd, 300) << toString(kind);
    }
}

TEST(StateReducerTest, UpdateOfQuantizedLayerGrowsTheResidual) {
    LayerState layer = layerOfKind(LayerKind::Quantized);
    layer.quantizedTokens = 128;
    layer = folded(
        layer, 5,
        UpdateEvent{.tokensIn = 1, .seqLength = 133, .storedTokens = 133, .layerType = LayerKind::Quantized});
    EXPECT_EQ(layer.residualTokens, 5);
    EXPECT_EQ(layer.quantizedTokens, 128);
}

TEST(StateReducerTest, FlushAndUpdateCommuteForQuantizedLayers) {
    const UpdateEvent update{.tokensIn = 1,
                             .seqLength = 256,
                             .storedTokens = 256,
                             .bytes = 999,
                             .layerType = LayerKind::Quantized};
    QuantizeFlushEvent flush;
    flush.tokensMoved = 128;
    flush.residualBefore = 128;
    flush.residualAfter = 0;
    flush.quantizedTokensAfter = 256;
    flush.bytesBefore = 5000;
    flush.bytesAfter = 999;
    flush.relativeError = 0.25;

    LayerState start = layerOfKind(LayerKind::Quantized);
    start.quantizedTokens = 128;
    start.residualTokens = 127;
    const LayerState updateThenFlush = folded(folded(start, 9, update), 9, flush);
    const LayerState flushThenUpdate = folded(folded(start, 9, flush), 9, update);
    EXPECT_EQ(updateThenFlush, flushThenUpdate);
    EXPECT_EQ(updateThenFlush.residualTokens, 0);
    EXPECT_EQ(updateThenFlush.quantizedTokens, 256);
    EXPECT_EQ(updateThenFlush.lastFlushStep, 9);
    EXPECT_EQ(updateThenFlush.lastFlushRelativeError, 0.25);
    EXPECT_EQ(updateThenFlush.bytesDevice, 999);
}

TEST(StateReducerTest, MaskSizesSetQueryAndKv) {
    const LayerState layer = folded(LayerState{}, 2, MaskSizesEvent{1, 257, 44});
    EXPECT_EQ(layer.queryLength, 1);
    EXPECT_EQ(layer.kvLength, 257);
    EXPECT_EQ(layer.kvOffset, 44);
}

TEST(StateReducerTest, WindowSlideSetsWindowAndCountsEvictions) {
    LayerState layer = folded(LayerState{}, 2, WindowSlideEvent{3, 10, 266, 256});
    layer = folded(layer, 3, WindowSlideEvent{1, 11, 267, 256});
    EXPECT_EQ(layer.windowStart, 11);
    EXPECT_EQ(layer.windowEnd, 267);
    EXPECT_EQ(layer.windowSize, 256);
    EXPECT_EQ(layer.evictedTokens, 4);
}

TEST(StateReducerTest, OffloadThenPrefetchMovesBytesBetweenTiers) {
    LayerState layer;
    layer.bytesDevice = 8192;
    layer.bytesDeviceQuantized = 1024;
    layer = folded(layer, 1,
                   TransferEvent{TransferDirection::Offload, TransferLane::Compute, TimingSource::Modeled,
                                 100, 200, 8192});
    EXPECT_EQ(layer.residency, Residency::Host);
    EXPECT_EQ(layer.bytesHost, 8192);
    EXPECT_EQ(layer.bytesDevice, 0);
    EXPECT_EQ(layer.bytesDeviceQuantized, 0);

    layer = folded(layer, 2,
                   TransferEvent{TransferDirection::Prefetch, TransferLane::Prefetch, TimingSource::Measured,
                                 300, 400, 8192});
    EXPECT_EQ(layer.residency, Residency::Device);
    EXPECT_EQ(layer.bytesDevice, 8192);
    EXPECT_EQ(layer.bytesHost, 0);
}

TEST(StateReducerTest, CropRemovesTokensFromTheTail) {
    LayerState dynamic = layerOfKind(LayerKind::Dynamic);
    dynamic.seqLength = dynamic.storedTokens = 20;
    dynamic = folded(dynamic, 3, CropEvent{15, 20, 15});
    EXPECT_EQ(dynamic.seqLength, 15);
    EXPECT_EQ(dynamic.storedTokens, 15);

    LayerState sliding = layerOfKind(LayerKind::DynamicSlidingWindow);
    sliding.seqLength = 20;
    sliding.storedTokens = 8;
    sliding = folded(sliding, 3, CropEvent{17, 20, 17});
    EXPECT_EQ(sliding.storedTokens, 5);
    EXPECT_EQ(sliding.windowStart, 12);
    EXPECT_EQ(sliding.windowEnd, 17);

    LayerState quantized = layerOfKind(LayerKind::Quantized);
    quantized.seqLength = quantized.storedTokens = 20;
    quantized.quantizedTokens = 16;
    quantized.residualTokens = 4;
    quantized = folded(quantized, 3, CropEvent{10, 20, 10});
    EXPECT_EQ(quantized.quantizedTokens, 10);
    EXPECT_EQ(quantized.residualTokens, 0);

    // A masking press (AdaKV) keeps every token where it was.
    LayerState masked = layerOfKind(LayerKind::Quantized);
    masked.seqLength = masked.storedTokens = 20;
    masked.quantizedTokens = 16;
    masked.residualTokens = 4;
    EXPECT_EQ(folded(masked, 0, CompressionEvent{20, 20, 2, 12, 0, {}, {}, {}, {14, 14}}), masked);
}

TEST(StateReducerTest, CompressionKeepsThePressedTokens) {
    LayerState dynamic = layerOfKind(LayerKind::Dynamic);
    dynamic.seqLength = dynamic.storedTokens = 20;
    dynamic = folded(dynamic, 0, CompressionEvent{20, 8, 2, 12, 0, {}, {}, {}, {}});
    EXPECT_EQ(dynamic.seqLength, 8);
    EXPECT_EQ(dynamic.storedTokens, 8);
    EXPECT_EQ(dynamic.evictedTokens, 12);

    LayerState quantized = layerOfKind(LayerKind::Quantized);
    quantized.seqLength = quantized.storedTokens = 20;
    quantized.quantizedTokens = 16;
    quantized.residualTokens = 4;
    quantized = folded(quantized, 0, CompressionEvent{20, 10, 2, 10, 0, {}, {}, {}, {}});
    EXPECT_EQ(quantized.quantizedTokens, 10);
    EXPECT_EQ(quantized.residualTokens, 0);

    // A masking press (AdaKV) keeps every token where it was.
    LayerState masked = layerOfKind(LayerKind::Quantized);
    masked.seqLength = masked.storedTokens = 20;
    masked.quantizedTokens = 16;
    masked.residualTokens = 4;
    EXPECT_EQ(folded(masked, 0, CompressionEvent{20, 20, 2, 12, 0, {}, {}, {}, {14, 14}}), masked);
}

// Until the engine's Memory event follows, an eviction scales the layer's bytes by the tokens kept; a static
// layer keeps its size, and a damaged file's huge byte counts scale without overflowing.
TEST(StateReducerTest, CompressionScalesTheBytesByTheTokensKept) {
    struct Case {
        const char* what;
        LayerKind kind;
        std::int64_t device, quantized, host;
        CompressionEvent event;
        std::int64_t deviceAfter, quantizedAfter, hostAfter;
    };
    constexpr std::int64_t kHuge = std::numeric_limits<std::int64_t>::max();
    const std::vector<Case> cases = {
        {"dynamic, 20 to 8",
         LayerKind::Dynamic,
         20 * 512,
         0,
         0,
         {20, 8, 2, 12, 0, {}, {}, {}, {}},
         8 * 512,
         0,
         0},
        {"quantized, every tier",
         LayerKind::Quantized,
         2000,
         1600,
         400,
         {20, 10, 2, 10, 0, {}, {}, {}, {}},
         1000,
         800,
         200},
        {"static keeps its size",
         LayerKind::Static,
         32 * 512,
         0,
         0,
         {20, 8, 2, 12, 0, {}, {}, {}, {}},
         32 * 512,
         0,
         0},
        {"a mask keeps every byte",
         LayerKind::Dynamic,
         20 * 512,
         0,
         0,
         {20, 20, 2, 12, 0, {}, {}, {}, {14, 14}},
         20 * 512,
         0,
         0},
        {"huge bytes",
         LayerKind::Dynamic,
         kHuge,
         0,
         0,
         {10, 6, 2, 4, 0, {}, {}, {}, {}},
         kHuge / 10 * 6 + 4,
         0,
         0},
    };
    for (const Case& c : cases) {
        LayerState layer = layerOfKind(c.kind);
        layer.seqLength = layer.storedTokens = c.event.lengthBefore;
        layer.bytesDevice = c.device;
        layer.bytesDeviceQuantized = c.quantized;
        layer.bytesHost = c.host;
        layer = folded(layer, 0, c.event);
        EXPECT_EQ(layer.bytesDevice, c.deviceAfter) << c.what;
        EXPECT_EQ(layer.bytesDeviceQuantized, c.quantizedAfter) << c.what;
        EXPECT_EQ(layer.bytesHost, c.hostAfter) << c.what;
    }
}

TEST(StateReducerTest, ReorderChangesNothingAndBatchOpsSetBatchSize) {
    LayerState layer = folded(LayerState{}, 1, UpdateEvent{.tokensIn = 3, .seqLength = 3, .storedTokens = 3});
    EXPECT_EQ(folded(layer, 2, ReorderEvent{{1, 0}}), layer);
    layer = folded(layer, 2, BatchRepeatEvent{3, 2, 6});
    EXPECT_EQ(layer.batchSize, 6);
    layer = folded(layer, 2, BatchSelectEvent{{0, 5}, 6, 2});
    EXPECT_EQ(layer.batchSize, 2);
}

TEST(StateReducerTest, ResetClearsTokensButKeepsBytes) {
    LayerState layer = layerOfKind(LayerKind::Quantized);
    layer.seqLength = layer.storedTokens = layer.returnedTokens = 30;
    layer.kvLength = 30;
    layer.kvOffset = 2;
    layer.queryLength = 1;
    layer.windowStart = 4;
    layer.windowEnd = 30;
    layer.evictedTokens = 4;
    layer.residualTokens = 2;
    layer.quantizedTokens = 28;
    layer.bytesDevice = 777;
    layer.lastFlushStep = 12;

    const LayerState reset = folded(layer, 13, ResetEvent{});
    LayerState expected = layerOfKind(LayerKind::Quantized);
    expected.bytesDevice = 777;
    expected.lastFlushStep = 12;
    EXPECT_EQ(reset, expected);
}

TEST(StateReducerTest, MemoryOfALayerSetsItsTiers) {
    const LayerState layer = folded(LayerState{}, 1, MemoryEvent{100, 20, 3});
    EXPECT_EQ(layer.bytesDevice, 120);
    EXPECT_EQ(layer.bytesDeviceQuantized, 20);
    EXPECT_EQ(layer.bytesDeviceFullPrecision(), 100);
    EXPECT_EQ(layer.bytesHost, 3);
}

TEST(StateReducerTest, StepEventsLeaveLayersAlone) {
    const LayerState layer = folded(LayerState{}, 1, UpdateEvent{.tokensIn = 3, .seqLength = 3});
    EXPECT_EQ(folded(layer, 1, StepBeginEvent{5, "x"}), layer);
    EXPECT_EQ(folded(layer, 1, StepEndEvent{6, "y", 10}), layer);
}

TEST(StateReducerTest, ScopeOfEachKind) {
    using Scope = StateReducer::Scope;
    EXPECT_EQ(StateReducer::scopeOf(makeEvent(0, 2, UpdateEvent{})), Scope::Layer);
    EXPECT_EQ(StateReducer::scopeOf(makeEvent(0, -1, CropEvent{})), Scope::AllLayers);
    EXPECT_EQ(StateReducer::scopeOf(makeEvent(0, -1, MemoryEvent{})), Scope::Step);
    EXPECT_EQ(StateReducer::scopeOf(makeEvent(0, 4, MemoryEvent{})), Scope::Layer);
    EXPECT_EQ(StateReducer::scopeOf(makeEvent(0, 4, StepBeginEvent{})), Scope::Step);
    EXPECT_EQ(StateReducer::scopeOf(makeEvent(0, -1, StepEndEvent{})), Scope::Step);
}

TEST(StateReducerTest, StepStateRoutesEventsByScope) {
    StepState state;
    StateReducer::beginStep(state, 0);
    StateReducer::apply(state, makeEvent(0, -1, ResetEvent{})); // no layer known yet: reaches none
    EXPECT_TRUE(state.layers.empty());

    StateReducer::apply(state,
                        makeEvent(0, 2, UpdateEvent{.tokensIn = 4, .seqLength = 4, .storedTokens = 4}));
    ASSERT_EQ(state.layers.size(), 3u); // grows to the highest layer seen
    EXPECT_FALSE(state.layers[0].initialized);
    EXPECT_EQ(state.layers[2].seqLength, 4);

    StateReducer::apply(state, makeEvent(0, -1, CropEvent{3, 4, 3})); // broadcast to every known layer
    EXPECT_EQ(state.layers[0].seqLength, 3);
    EXPECT_EQ(state.layers[2].seqLength, 3);
    EXPECT_EQ(state.layers[2].storedTokens, 3);

    StateReducer::apply(state, makeEvent(0, -1, MemoryEvent{10, 20, 30}));
    EXPECT_EQ(state.memoryDeviceFullPrecision, 10);
    EXPECT_EQ(state.memoryDeviceQuantized, 20);
    EXPECT_EQ(state.memoryHost, 30);
    EXPECT_EQ(state.memoryDeviceTotal(), 30);
    EXPECT_EQ(state.layers[2].bytesHost, 0); // cache-wide memory is not a layer's

    StateReducer::apply(state, makeEvent(0, 1, MemoryEvent{1, 2, 3}));
    EXPECT_EQ(state.layers[1].bytesHost, 3);
    EXPECT_EQ(state.memoryHost, 30);

    StateReducer::apply(state, makeEvent(0, -1, StepBeginEvent{-1, "prompt"}));
    StateReducer::apply(state, makeEvent(0, -1, StepEndEvent{17, " hi", 5000}));
    EXPECT_EQ(state.inputText, "prompt");
    EXPECT_EQ(state.tokenId, 17);
    EXPECT_EQ(state.tokenText, " hi");
    EXPECT_EQ(state.wallNs, 5000);
}

TEST(StateReducerTest, BeginStepClearsOnlyPerStepFields) {
    StepState state;
    StateReducer::apply(state, makeEvent(0, 0, UpdateEvent{.tokensIn = 4, .seqLength = 4}));
    StateReducer::apply(state, makeEvent(0, -1, MemoryEvent{1, 2, 3}));
    StateReducer::apply(state, makeEvent(0, -1, StepBeginEvent{9, "in"}));
    StateReducer::apply(state, makeEvent(0, -1, StepEndEvent{17, "out", 5000}));
    StateReducer::beginStep(state, 1);
    EXPECT_EQ(state.step, 1);
    EXPECT_EQ(state.inputTokenId, -1);
    EXPECT_TRUE(state.inputText.empty());
    EXPECT_EQ(state.tokenId, -1);
    EXPECT_TRUE(state.tokenText.empty());
    EXPECT_EQ(state.wallNs, 0);
    EXPECT_EQ(state.memoryHost, 3);
    EXPECT_EQ(state.layers.at(0).seqLength, 4);
}
