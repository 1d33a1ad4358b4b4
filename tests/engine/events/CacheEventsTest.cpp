// SPDX-License-Identifier: GPL-3.0-or-later
// Events of Cache operations per layer type: the steps at which windows slide and quantized layers
// flush must be the reference's (research notes hf-cache.md 1.3.2, 1.3.4, 1.3.8).

#include "EventTestHelpers.h"
#include "kvscope/cache/Cache.h"
#include "kvscope/cache/CacheError.h"
#include "kvscope/cache/DynamicLayer.h"
#include "kvscope/cache/DynamicSlidingWindowLayer.h"
#include "kvscope/cache/LinearAttentionLayer.h"
#include "kvscope/cache/LlamaCppLayer.h"
#include "kvscope/cache/MinMaxQuantizer.h"
#include "kvscope/cache/QuantizedLayer.h"
#include "kvscope/cache/StaticLayer.h"
#include "kvscope/cache/StaticSlidingWindowLayer.h"
#include "kvscope/gguf/BlockType.h"
#include "kvscope/trace/RecordingSink.h"
#include "kvscope/trace/StateReducer.h"

#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <array>
#include <memory>

namespace kvscope::cache {
namespace {

using testing::eventsOf;
using testing::tokens;
using trace::LayerKind;

std::unique_ptr<Cache> singleLayerCache(std::unique_ptr<CacheLayer> layer) {
    std::vector<std::unique_ptr<CacheLayer>> layers;
    layers.push_back(std::move(layer));
    return std::make_unique<Cache>(std::move(layers));
}

// Feeds `prefill` tokens at step 0, then one token per step up to `steps` steps in all.
void feed(Cache& cache, int64_t prefill, int64_t steps, int64_t heads = 1, int64_t headDim = 1) {
    float next = 1.0f;
    for (int64_t step = 0; step < steps; ++step) {
        cache.setStep(step);
        const int64_t count = step == 0 ? prefill : 1;
        const at::Tensor states = tokens(count, next, heads, headDim);
        next += static_cast<float>(states.numel());
        cache.update(states, states, 0);
    }
}

struct Slide {
    int64_t step;
    int64_t evicted;
    int64_t windowStart;
    int64_t windowEnd;
    bool operator==(const Slide&) const = default;
};

std::vector<Slide> slidesOf(const std::vector<trace::Event>& events) {
    std::vector<Slide> slides;
    for (const auto& [event, slide] : eventsOf<trace::WindowSlideEvent>(events)) {
        slides.push_back({event.step, slide.positionsEvicted, slide.windowStart, slide.windowEnd});
    }
    return slides;
}

TEST(CacheEventsTest, DynamicSlidingWindowSlidesFromTheWthTokenAndKeepsWMinusOne) {
    auto cache = singleLayerCache(std::make_unique<DynamicSlidingWindowLayer>(4));
    trace::RecordingSink sink;
    cache->setEventSink(&sink);
    feed(*cache, 1, 10);

    // Tokens 1..3 fit; from the 4th on every update evicts one position and 3 (= W - 1) stay.
    std::vector<Slide> expected;
    for (int64_t step = 3; step < 10; ++step) {
        expected.push_back({step, 1, step + 1 - 3, step + 1});
    }
    EXPECT_EQ(slidesOf(sink.events()), expected);
    for (const auto& [event, slide] : eventsOf<trace::WindowSlideEvent>(sink.events())) {
        EXPECT_EQ(slide.windowSize, 4);
        EXPECT_EQ(event.layer, 0);
    }
    const auto updates = eventsOf<trace::UpdateEvent>(sink.events());
    ASSERT_EQ(updates.size(), 10u);
    EXPECT_EQ(updates[9].second,
              (trace::UpdateEvent{1, 10, 3, 3, 4, cache->layer(0).storedBytes(), LayerKind::DynamicSlidingWindow}));
}

TEST(CacheEventsTest, StaticSlidingWindowSlidesOneStepLaterAndKeepsW) {
    auto cache = singleLayerCache(std::make_unique<StaticSlidingWindowLayer>(16, 4));
    trace::RecordingSink sink;
    cache->setEventSink(&sink);
    feed(*cache, 1, 10);

    std::vector<Slide> expected;
    for (int64_t step = 4; step < 10; ++step) {
        expected.push_back({step, 1, step + 1 - 4, step + 1});
    }
    EXPECT_EQ(slidesOf(sink.events()), expected);
    const auto updates = eventsOf<trace::UpdateEvent>(sink.events());
    ASSERT_EQ(updates.size(), 10u);
    // The static window returns its whole buffer while it fills, then the window it holds.
    EXPECT_EQ(updates[1].second.returnedTokens, 4);
    EXPECT_EQ(updates[9].second,
              (trace::UpdateEvent{1, 10, 4, 4, 4, cache->layer(0).storedBytes(), LayerKind::StaticSlidingWindow}));
}

TEST(CacheEventsTest, LongPrefillEvictsEverythingBeyondTheWindowAtOnce) {
    auto dynamicCache = singleLayerCache(std::make_unique<DynamicSlidingWindowLayer>(4));
    auto staticCache = singleLayerCache(std::make_unique<StaticSlidingWindowLayer>(8, 4));
    trace::RecordingSink dynamicSink;
    trace::RecordingSink staticSink;
    dynamicCache->setEventSink(&dynamicSink);
    staticCache->setEventSink(&staticSink);
    feed(*dynamicCache, 6, 2);
    feed(*staticCache, 6, 2);
    // [1..6] keeps [4,5,6] (dynamic) or [3,4,5,6] (static); [7] then slides by one.
    EXPECT_EQ(slidesOf(dynamicSink.events()), (std::vector<Slide>{{0, 3, 3, 6}, {1, 1, 4, 7}}));
    EXPECT_EQ(slidesOf(staticSink.events()), (std::vector<Slide>{{0, 2, 2, 6}, {1, 1, 3, 7}}));
}

TEST(CacheEventsTest, FullLayersNeverSlide) {
    auto dynamicCache = singleLayerCache(std::make_unique<DynamicLayer>());
    auto staticCache = singleLayerCache(std::make_unique<StaticLayer>(12));
    trace::RecordingSink dynamicSink;
    trace::RecordingSink staticSink;
    dynamicCache->setEventSink(&dynamicSink);
    staticCache->setEventSink(&staticSink);
    feed(*dynamicCache, 2, 10);
    feed(*staticCache, 2, 10);
    EXPECT_TRUE(slidesOf(dynamicSink.events()).empty());
    EXPECT_TRUE(slidesOf(staticSink.events()).empty());
    const auto dynamicUpdates = eventsOf<trace::UpdateEvent>(dynamicSink.events());
    const auto staticUpdates = eventsOf<trace::UpdateEvent>(staticSink.events());
    ASSERT_EQ(dynamicUpdates.size(), 10u);
    ASSERT_EQ(staticUpdates.size(), 10u);
    EXPECT_EQ(dynamicUpdates[9].second, (trace::UpdateEvent{1, 11, 11, -1, 11, 11 * 2 * 4, LayerKind::Dynamic}));
    // A static layer holds (and returns) its whole preallocated buffer.
    EXPECT_EQ(staticUpdates[0].second, (trace::UpdateEvent{2, 2, 2, 12, 12, 12 * 2 * 4, LayerKind::Static}));
}

struct Flush {
    int64_t step;
    int64_t tokensMoved;
    int64_t residualBefore;
    int64_t residualAfter;
    int64_t quantizedAfter;
    bool operator==(const Flush&) const = default;
};

TEST(CacheEventsTest, QuantizedLayerFlushesOnTheReferencesSteps) {
    // Residual length 4: the prefill is quantized whole, then a flush comes on the update that finds
    // the residual holding R - 1 = 3 tokens (hf-cache.md 1.3.8: [1,2,3] | [4] [5] [6] [7]flush ...).
    auto quantizer = std::make_shared<MinMaxQuantizer>(4, 8);
    auto cache = singleLayerCache(std::make_unique<QuantizedLayer>(quantizer, 0, 0, 4));
    trace::RecordingSink sink;
    cache->setEventSink(&sink);
    feed(*cache, 3, 12, 2, 8);

    std::vector<Flush> flushes;
    for (const auto& [event, flush] : eventsOf<trace::QuantizeFlushEvent>(sink.events())) {
        flushes.push_back({event.step, flush.tokensMoved, flush.residualBefore, flush.residualAfter,
                           flush.quantizedTokensAfter});
        EXPECT_GT(flush.bytesBefore, flush.bytesAfter) << "a flush packs full-precision tokens at 4 bits";
        EXPECT_GE(flush.maxAbsError, flush.meanAbsError);
    }
    // Steps 0, 4 (token 7) and 8 (token 11); the residual drained is what it held plus the new token.
    EXPECT_EQ(flushes, (std::vector<Flush>{{0, 3, 3, 0, 3}, {4, 4, 4, 0, 7}, {8, 4, 4, 0, 11}}));

    const auto updates = eventsOf<trace::UpdateEvent>(sink.events());
    ASSERT_EQ(updates.size(), 12u);
    EXPECT_EQ(updates[0].second.returnedTokens, 3);
    EXPECT_EQ(updates[11].second.seqLength, 14);
    EXPECT_EQ(updates[11].second.storedTokens, 14);
    EXPECT_EQ(updates[11].second.layerType, LayerKind::Quantized);
}

TEST(CacheEventsTest, UpdateEventsComeInTheDocumentedOrder) {
    auto cache = singleLayerCache(std::make_unique<DynamicSlidingWindowLayer>(2));
    trace::RecordingSink sink;
    cache->setEventSink(&sink);
    cache->setStep(7);
    const at::Tensor states = tokens(3);
    cache->update(states, states, 0);
    std::vector<trace::EventKind> kinds;
    for (const trace::Event& event : sink.events()) {
        kinds.push_back(event.kind());
        EXPECT_EQ(event.step, 7);
    }
    // A plain layer's device bytes are in its Update event, so no Memory of its own follows; the
    // cache-wide totals come when the step is finished.
    EXPECT_EQ(kinds, (std::vector<trace::EventKind>{trace::EventKind::Update, trace::EventKind::WindowSlide}));
    cache->finishStep();
    ASSERT_EQ(sink.size(), 3u);
    EXPECT_EQ(sink.events()[2].kind(), trace::EventKind::Memory);
    EXPECT_EQ(sink.events()[2].layer, -1);
    EXPECT_EQ(sink.events()[2].step, 7);
    cache->finishStep();
    EXPECT_EQ(sink.size(), 3u) << "unchanged totals are not repeated";
    for (size_t index = 0; index < sink.size(); ++index) {
        EXPECT_EQ(sink.events()[index].sequence, index);
    }
}

TEST(CacheEventsTest, QuantizedLayersReportTheirTiersWhenAFlushChangesThem) {
    auto quantizer = std::make_shared<MinMaxQuantizer>(4, 8);
    auto cache = singleLayerCache(std::make_unique<QuantizedLayer>(quantizer, 0, 0, 4));
    trace::RecordingSink sink;
    cache->setEventSink(&sink);
    feed(*cache, 3, 6, 2, 8); // flushes at steps 0 and 4
    std::vector<int64_t> memorySteps;
    for (const auto& [event, memory] : eventsOf<trace::MemoryEvent>(sink.events(), 0)) {
        memorySteps.push_back(event.step);
    }
    // Between flushes the quantized bytes stay and the residual is the rest of the Update's bytes.
    EXPECT_EQ(memorySteps, (std::vector<int64_t>{0, 4}));

    trace::LayerState folded;
    for (const trace::Event& event : sink.events()) {
        if (event.layer == 0) {
            trace::StateReducer::apply(folded, event);
        }
    }
    const auto& layer = dynamic_cast<const QuantizedLayer&>(cache->layer(0));
    EXPECT_GT(layer.residualBytes(), 0);
    EXPECT_EQ(folded.bytesDeviceQuantized, layer.quantizedBytes());
    EXPECT_EQ(folded.bytesDeviceFullPrecision(), layer.residualBytes());
    EXPECT_EQ(folded.residualTokens, 1);
    EXPECT_EQ(folded.quantizedTokens, 7);
}

TEST(CacheEventsTest, LlamaCppLayersQuantiseEachUpdateAsAFlushWithoutResidual) {
    // q4_0 keys, f16 values, heads of 32: every update quantises its own tokens.
    auto cache = singleLayerCache(std::make_unique<LlamaCppLayer>(*gguf::BlockType::find("q4_0"),
                                                                  *gguf::BlockType::find("f16"), true));
    trace::RecordingSink sink;
    cache->setEventSink(&sink);
    feed(*cache, 3, 5, 2, 32);
    std::vector<std::array<int64_t, 4>> flushes; // step, tokens moved, residual after, quantized after
    for (const auto& [event, flush] : eventsOf<trace::QuantizeFlushEvent>(sink.events(), 0)) {
        flushes.push_back({event.step, flush.tokensMoved, flush.residualAfter, flush.quantizedTokensAfter});
        EXPECT_GT(flush.relativeError, 0.0);
    }
    EXPECT_EQ(flushes, (std::vector<std::array<int64_t, 4>>{{0, 3, 0, 3}, {1, 1, 0, 4}, {2, 1, 0, 5}, {3, 1, 0, 6},
                                                            {4, 1, 0, 7}}));
    trace::LayerState folded;
    for (const trace::Event& event : sink.events()) {
        if (event.layer == 0) {
            trace::StateReducer::apply(folded, event);
        }
    }
    // 7 tokens x 2 heads: q4_0 keys one block each (18 bytes), f16 values 64 bytes.
    EXPECT_EQ(folded.quantizedTokens, 7);
    EXPECT_EQ(folded.residualTokens, 0);
    EXPECT_EQ(folded.bytesDeviceQuantized, 7 * 2 * 18);
    EXPECT_EQ(folded.bytesDeviceFullPrecision(), 7 * 2 * 64);
}

TEST(CacheEventsTest, LlamaCppLayersReportChannelErrorsEveryStepThenEvery32ndMoreTokens) {
    // q4_0 keys and values, 2 heads of 32: 60 prompt tokens, then 20 steps of one token.
    auto cache = singleLayerCache(std::make_unique<LlamaCppLayer>(*gguf::BlockType::find("q4_0"),
                                                                  *gguf::BlockType::find("q4_0"), true));
    trace::RecordingSink sink;
    cache->setEventSink(&sink);
    feed(*cache, 60, 21, 2, 32);
    std::vector<int64_t> reported;
    for (const auto& [event, report] : eventsOf<trace::ChannelErrorEvent>(sink.events(), 0)) {
        reported.push_back(report.tokens);
        EXPECT_EQ(report.heads, 2);
        EXPECT_EQ(report.keyError.size(), 64U);
        EXPECT_EQ(report.valueSize.size(), 64U);
    }
    // Up to 64 tokens every step; then the count must grow by 64 / 32 = 2 tokens.
    EXPECT_EQ(reported, (std::vector<int64_t>{60, 61, 62, 63, 64, 66, 68, 70, 72, 74, 76, 78, 80}));
    // Each report is the layer's whole count, as the layer holds it.
    const auto& layer = dynamic_cast<const LlamaCppLayer&>(cache->layer(0));
    const trace::ChannelErrorEvent last = eventsOf<trace::ChannelErrorEvent>(sink.events(), 0).back().second;
    EXPECT_EQ(last.keyError, layer.keyChannelError().rmsError());
    EXPECT_EQ(last.valueSize, layer.valueChannelError().rmsValue());
    // A reset starts the count over, and a new sink is told the count at the next update.
    cache->reset();
    cache->setStep(21);
    const at::Tensor one = tokens(1, 1.0F, 2, 32);
    cache->update(one, one, 0);
    EXPECT_EQ(eventsOf<trace::ChannelErrorEvent>(sink.events(), 0).back().second.tokens, 1);
    trace::RecordingSink later;
    cache->setEventSink(&later);
    cache->setStep(22);
    cache->update(one, one, 0);
    ASSERT_EQ(eventsOf<trace::ChannelErrorEvent>(later.events(), 0).size(), 1U);
    EXPECT_EQ(eventsOf<trace::ChannelErrorEvent>(later.events(), 0).back().second.tokens, 2);
}

TEST(CacheEventsTest, MaskSizesAreReportedForTheLayerAsked) {
    std::vector<std::unique_ptr<CacheLayer>> layers;
    layers.push_back(std::make_unique<DynamicLayer>());
    layers.push_back(std::make_unique<DynamicSlidingWindowLayer>(4));
    Cache cache(std::move(layers));
    trace::RecordingSink sink;
    cache.setEventSink(&sink);
    const at::Tensor states = tokens(5);
    cache.update(states, states, 0);
    cache.update(states, states, 1);
    sink.clear();

    const Cache& constCache = cache;
    EXPECT_EQ(constCache.maskSizes(1, 1), (MaskSizes{4, 2}));
    EXPECT_EQ(constCache.maskSizes(2, -2), (MaskSizes{7, 0}));
    const auto masks = eventsOf<trace::MaskSizesEvent>(sink.events());
    ASSERT_EQ(masks.size(), 2u);
    EXPECT_EQ(masks[0].first.layer, 1);
    EXPECT_EQ(masks[0].second, (trace::MaskSizesEvent{1, 4, 2}));
    EXPECT_EQ(masks[1].first.layer, 0);
    EXPECT_EQ(masks[1].second, (trace::MaskSizesEvent{2, 7, 0}));
}

TEST(CacheEventsTest, NothingIsEmittedWithoutASinkOrAfterDetaching) {
    auto cache = singleLayerCache(std::make_unique<DynamicLayer>());
    trace::RecordingSink sink;
    const at::Tensor states = tokens(2);
    cache->update(states, states, 0);
    cache->setEventSink(&sink);
    cache->update(states, states, 0);
    EXPECT_EQ(sink.size(), 1u);
    cache->setEventSink(nullptr);
    // Detaching closes the step: the totals still reach the old sink.
    const size_t attached = sink.size();
    ASSERT_EQ(attached, 2u);
    EXPECT_EQ(sink.events().back().layer, -1);
    EXPECT_EQ(sink.events().back().kind(), trace::EventKind::Memory);
    cache->update(states, states, 0);
    (void)cache->maskSizes(1, 0);
    cache->crop(1);
    EXPECT_EQ(sink.size(), attached);
    EXPECT_EQ(cache->eventSink(), nullptr);
}

TEST(CacheEventsTest, LinearAttentionStateUpdatesShowTheLayerAndItsBytes) {
    auto cache = singleLayerCache(std::make_unique<LinearAttentionLayer>());
    trace::RecordingSink sink;
    cache->setEventSink(&sink);
    const at::Tensor conv = at::ones({1, 4, 3});
    const at::Tensor recurrent = at::ones({1, 2, 4, 4});
    cache->updateConvState(conv, 0);
    EXPECT_TRUE(eventsOf<trace::UpdateEvent>(sink.events()).empty()) << "one event per step: the recurrent update";
    cache->updateRecurrentState(recurrent, 0);
    const auto updates = eventsOf<trace::UpdateEvent>(sink.events());
    ASSERT_EQ(updates.size(), 1u);
    EXPECT_EQ(updates[0].first.layer, 0);
    EXPECT_EQ(updates[0].second.layerType, LayerKind::LinearAttention);
    EXPECT_EQ(updates[0].second.storedTokens, 0);
    EXPECT_EQ(updates[0].second.bytes, (conv.numel() + recurrent.numel()) * 4);
    trace::StepState state;
    for (const trace::Event& event : sink.events()) {
        trace::StateReducer::apply(state, event);
    }
    EXPECT_EQ(state.layers.at(0).kind, LayerKind::LinearAttention);
    EXPECT_EQ(state.layers.at(0).bytesDevice, (conv.numel() + recurrent.numel()) * 4);
}

TEST(CacheEventsTest, MemoryTotalsIncludeBytesHeldBeforeTheSinkWasAttached) {
    std::vector<std::unique_ptr<CacheLayer>> layers;
    layers.push_back(std::make_unique<DynamicLayer>());
    layers.push_back(std::make_unique<DynamicLayer>());
    Cache cache(std::move(layers));
    const at::Tensor states = tokens(4);
    cache.update(states, states, 0);
    cache.update(states, states, 1);
    trace::RecordingSink sink;
    cache.setEventSink(&sink);
    cache.update(tokens(1), tokens(1), 1);
    cache.setStep(1); // a new step emits the totals of the one before
    const auto memory = eventsOf<trace::MemoryEvent>(sink.events(), -1);
    ASSERT_EQ(memory.size(), 1u);
    EXPECT_EQ(memory[0].second.deviceFullPrecision, cache.layer(0).storedBytes() + cache.layer(1).storedBytes());
    EXPECT_EQ(memory[0].second.deviceQuantized, 0);
    EXPECT_EQ(memory[0].second.host, 0);
}

TEST(CacheEventsTest, CropReorderBatchAndResetAreReported) {
    std::vector<std::unique_ptr<CacheLayer>> layers;
    layers.push_back(std::make_unique<DynamicLayer>());
    layers.push_back(std::make_unique<DynamicSlidingWindowLayer>(8));
    Cache cache(std::move(layers));
    trace::RecordingSink sink;
    cache.setEventSink(&sink);
    const at::Tensor states = at::cat({tokens(5), tokens(5, 100.0f)}, 0); // batch of 2
    cache.update(states, states, 0);
    cache.update(states, states, 1);
    sink.clear();

    cache.crop(-2);
    const auto crops = eventsOf<trace::CropEvent>(sink.events());
    ASSERT_EQ(crops.size(), 2u);
    EXPECT_EQ(crops[0].first.layer, 0);
    EXPECT_EQ(crops[0].second, (trace::CropEvent{-2, 5, 3}));
    EXPECT_EQ(crops[1].first.layer, 1);
    EXPECT_EQ(crops[1].second, (trace::CropEvent{-2, 5, 3}));

    cache.reorder(at::tensor(std::vector<int64_t>{1, 0}));
    const auto reorders = eventsOf<trace::ReorderEvent>(sink.events());
    ASSERT_EQ(reorders.size(), 1u);
    EXPECT_EQ(reorders[0].first.layer, -1);
    EXPECT_EQ(reorders[0].second.beamIndices, (std::vector<int64_t>{1, 0}));

    cache.batchRepeatInterleave(3);
    const auto repeats = eventsOf<trace::BatchRepeatEvent>(sink.events());
    ASSERT_EQ(repeats.size(), 1u);
    EXPECT_EQ(repeats[0].second, (trace::BatchRepeatEvent{3, 2, 6}));

    cache.batchSelectIndices(at::tensor(std::vector<int64_t>{0, 5}));
    const auto selects = eventsOf<trace::BatchSelectEvent>(sink.events());
    ASSERT_EQ(selects.size(), 1u);
    EXPECT_EQ(selects[0].second, (trace::BatchSelectEvent{{0, 5}, 6, 2}));

    cache.reset();
    EXPECT_EQ(eventsOf<trace::ResetEvent>(sink.events()).size(), 1u);
    // Each of those operations is followed by Memory for both layers, and by the totals where they
    // changed: not after reorder, nor after reset (the reference zeroes its tensors in place).
    EXPECT_EQ(eventsOf<trace::MemoryEvent>(sink.events(), 1).size(), 5u);
    const auto totals = eventsOf<trace::MemoryEvent>(sink.events(), -1);
    ASSERT_EQ(totals.size(), 3u);
    EXPECT_EQ(totals.back().second.deviceFullPrecision, cache.layer(0).storedBytes() + cache.layer(1).storedBytes());
}

TEST(CacheEventsTest, ARefusedCropReportsTheLayersItCropped) {
    std::vector<std::unique_ptr<CacheLayer>> layers;
    layers.push_back(std::make_unique<DynamicLayer>());
    layers.push_back(std::make_unique<StaticLayer>(8));
    Cache cache(std::move(layers));
    trace::RecordingSink sink;
    cache.setEventSink(&sink);
    const at::Tensor states = tokens(4);
    cache.update(states, states, 0);
    cache.update(states, states, 1);
    sink.clear();
    EXPECT_THROW(cache.crop(2), CacheError);
    const auto crops = eventsOf<trace::CropEvent>(sink.events());
    ASSERT_EQ(crops.size(), 1u);
    EXPECT_EQ(crops[0].first.layer, 0);
    EXPECT_EQ(cache.seqLength(0), 2);
}

} // namespace
} // namespace kvscope::cache
