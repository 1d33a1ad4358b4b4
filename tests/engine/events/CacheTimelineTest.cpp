// SPDX-License-Identifier: GPL-3.0-or-later
// The StepState that trace::Timeline folds from a cache's events equals the cache's own state at
// every step, for caches built from configs of each style (full, sliding, hybrid, chunked).

#include "EventTestHelpers.h"
#include "kvscope/cache/Cache.h"
#include "kvscope/cache/DynamicCache.h"
#include "kvscope/cache/DynamicSlidingWindowLayer.h"
#include "kvscope/cache/QuantizedCache.h"
#include "kvscope/cache/QuantizedLayer.h"
#include "kvscope/cache/StaticCache.h"
#include "kvscope/cache/StaticSlidingWindowLayer.h"
#include "kvscope/config/ModelConfig.h"
#include "kvscope/trace/Timeline.h"

#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <functional>
#include <memory>

namespace kvscope::cache {
namespace {

using testing::tokens;

constexpr int64_t kHeads = 2;
constexpr int64_t kHeadDim = 8;
constexpr int64_t kPrefill = 5;
constexpr int64_t kStepsInCacheTimeline = 12; // step 0 is the prefill: 16 tokens in all

config::ModelConfig configOf(const std::string& style) {
    config::ModelConfig config;
    config.numHiddenLayers = 4;
    if (style == "sliding") {
        config.slidingWindow = 4;
    } else if (style == "hybrid") {
        config.slidingWindow = 3;
        config.layerTypes =
            std::vector<std::string>{"sliding_attention", "full_attention", "sliding_attention", "full_attention"};
    } else if (style == "chunked") {
        config.attentionChunkSize = 3;
        config.layerTypes =
            std::vector<std::string>{"chunked_attention", "full_attention", "chunked_attention", "full_attention"};
    }
    return config;
}

// What the cache itself says about one layer, in the fields the trace keeps.
struct Own {
    int64_t seqLength = 0;
    int64_t storedTokens = 0;
    int64_t capacity = -1;
    int64_t residualTokens = 0;
    int64_t quantizedTokens = 0;
    int64_t bytesDevice = 0;
    int64_t bytesDeviceQuantized = 0;
    int64_t bytesHost = 0;
    bool operator==(const Own&) const = default;
};

std::ostream& operator<<(std::ostream& out, const Own& own) {
    return out << "{seq " << own.seqLength << ", stored " << own.storedTokens << ", capacity " << own.capacity
               << ", residual " << own.residualTokens << ", quantized " << own.quantizedTokens << ", device "
               << own.bytesDevice << " (quantized " << own.bytesDeviceQuantized << "), host " << own.bytesHost << "}";
}

Own ownState(const Cache& cache, size_t index) {
    const CacheLayer& layer = cache.layer(index);
    const AttentionLayer& attention = *layer.asAttention();
    Own own;
    own.seqLength = attention.seqLength();
    own.storedTokens = attention.storedTokens();
    if (const auto* sliding = dynamic_cast<const DynamicSlidingWindowLayer*>(&layer)) {
        own.capacity = sliding->slidingWindow() - 1;
    } else if (auto length = attention.maxCacheLen()) {
        own.capacity = *length;
    }
    if (const auto* quantized = dynamic_cast<const QuantizedLayer*>(&layer)) {
        own.residualTokens = quantized->residualTokens();
        own.quantizedTokens = quantized->quantizedTokens();
        own.bytesDeviceQuantized = quantized->quantizedBytes();
    }
    own.bytesDevice = layer.storedBytes();
    if (cache.isOffloaded(index)) {
        own.bytesHost = own.bytesDevice;
        own.bytesDevice = 0;
        own.bytesDeviceQuantized = 0;
    }
    return own;
}

Own traceState(const trace::LayerState& layer) {
    return Own{layer.seqLength,      layer.storedTokens,    layer.capacity,
               layer.residualTokens, layer.quantizedTokens, layer.bytesDevice,
               layer.bytesDeviceQuantized, layer.bytesHost};
}

// Drives `cache` like a generator (mask sizes, then update, per layer and step) into a Timeline and
// checks every layer after every step.
void checkAgainstTimeline(Cache& cache) {
    trace::Timeline timeline;
    cache.setEventSink(&timeline);
    std::vector<std::vector<MaskSizes>> masks(kStepsInCacheTimeline, std::vector<MaskSizes>(cache.size()));
    std::vector<std::vector<Own>> own(kStepsInCacheTimeline, std::vector<Own>(cache.size()));
    float next = 1.0f;
    for (int64_t step = 0; step < kStepsInCacheTimeline; ++step) {
        cache.setStep(step);
        cache.eventEmitter().emit(-1, trace::StepBeginEvent{step == 0 ? -1 : step, step == 0 ? "<prompt>" : "t"});
        const int64_t count = step == 0 ? kPrefill : 1;
        for (size_t layer = 0; layer < cache.size(); ++layer) {
            const at::Tensor keys = tokens(count, next, kHeads, kHeadDim);
            next += static_cast<float>(keys.numel());
            masks[step][layer] = cache.maskSizes(count, static_cast<int64_t>(layer));
            cache.update(keys, keys * 2, static_cast<int64_t>(layer));
        }
        cache.finishStep();
        cache.eventEmitter().emit(-1, trace::StepEndEvent{step + 1, "u", 1000});
        for (size_t layer = 0; layer < cache.size(); ++layer) {
            own[step][layer] = ownState(cache, layer);
        }
    }
    cache.setEventSink(nullptr);

    ASSERT_EQ(timeline.stepCount(), kStepsInCacheTimeline);
    for (int64_t step = 0; step < kStepsInCacheTimeline; ++step) {
        const trace::StepState state = timeline.stateAt(step);
        ASSERT_EQ(state.layers.size(), cache.size());
        EXPECT_EQ(state.step, step);
        EXPECT_EQ(state.tokenId, step + 1);
        trace::MemoryEvent totals;
        for (size_t layer = 0; layer < cache.size(); ++layer) {
            const trace::LayerState& traced = state.layers[layer];
            EXPECT_EQ(traceState(traced), own[step][layer]) << "step " << step << " layer " << layer;
            EXPECT_EQ(traced.kvLength, masks[step][layer].kvLength) << "step " << step << " layer " << layer;
            EXPECT_EQ(traced.kvOffset, masks[step][layer].kvOffset) << "step " << step << " layer " << layer;
            EXPECT_EQ(traced.queryLength, step == 0 ? kPrefill : 1);
            EXPECT_EQ(traced.lastUpdateStep, step);
            if (trace::isSlidingWindow(traced.kind)) {
                EXPECT_EQ(traced.windowEnd, own[step][layer].seqLength);
                EXPECT_EQ(traced.windowStart, own[step][layer].seqLength - own[step][layer].storedTokens);
            }
            totals.deviceFullPrecision += traced.bytesDeviceFullPrecision();
            totals.deviceQuantized += traced.bytesDeviceQuantized;
            totals.host += traced.bytesHost;
        }
        EXPECT_EQ(state.memoryDeviceFullPrecision, totals.deviceFullPrecision) << "step " << step;
        EXPECT_EQ(state.memoryDeviceQuantized, totals.deviceQuantized) << "step " << step;
        EXPECT_EQ(state.memoryHost, totals.host) << "step " << step;
    }
}

class CacheTimelineTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CacheTimelineTest, DynamicCacheStateMatchesAtEveryStep) {
    DynamicCache cache(configOf(GetParam()));
    ASSERT_EQ(cache.size(), 4u);
    checkAgainstTimeline(cache);
}

TEST_P(CacheTimelineTest, StaticCacheStateMatchesAtEveryStep) {
    StaticCache cache(configOf(GetParam()), 20);
    ASSERT_EQ(cache.size(), 4u);
    checkAgainstTimeline(cache);
}

TEST_P(CacheTimelineTest, OffloadedDynamicCacheStateMatchesAtEveryStep) {
    DynamicCache cache(configOf(GetParam()), Offloading::AllLayers);
    checkAgainstTimeline(cache);
}

TEST_P(CacheTimelineTest, OffloadedStaticCacheStateMatchesAtEveryStep) {
    StaticCache cache(configOf(GetParam()), 20, Offloading::OnlyNonSliding);
    ::testing::internal::CaptureStderr(); // the all-sliding config prints its notice
    checkAgainstTimeline(cache);
    (void)::testing::internal::GetCapturedStderr();
}

INSTANTIATE_TEST_SUITE_P(ConfigStyles, CacheTimelineTest, ::testing::Values("full", "sliding", "hybrid", "chunked"));

TEST(CacheTimelineQuantizedTest, QuantizedCacheStateMatchesAtEveryStep) {
    QuantizationSettings settings;
    settings.groupSize = kHeadDim;
    settings.residualLength = 4;
    QuantizedCache cache(configOf("full"), settings);
    checkAgainstTimeline(cache);
}

TEST(CacheTimelineQuantizedTest, HqqQuantizedCacheStateMatchesAtEveryStep) {
    QuantizationSettings settings;
    settings.backend = config::QuantizerBackend::Hqq;
    settings.axisKey = 1;
    settings.axisValue = 1;
    settings.groupSize = kHeadDim;
    settings.residualLength = 3;
    QuantizedCache cache(configOf("full"), settings);
    checkAgainstTimeline(cache);
}

TEST(CacheTimelineQuantizedTest, OffloadedQuantizedLayersMoveAllTheirTiers) {
    QuantizationSettings settings;
    settings.groupSize = kHeadDim;
    settings.residualLength = 4;
    std::vector<std::unique_ptr<CacheLayer>> layers;
    for (int index = 0; index < 3; ++index) {
        layers.push_back(std::make_unique<QuantizedLayer>(QuantizedCache::makeQuantizer(settings), 0, 0, 4));
    }
    Cache cache(std::move(layers), Offloading::AllLayers);
    checkAgainstTimeline(cache);
}

} // namespace
} // namespace kvscope::cache
