// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/Cache.h"

#include "CacheTestHelpers.h"
#include "kvscope/cache/DynamicLayer.h"
#include "kvscope/cache/DynamicSlidingWindowLayer.h"
#include "kvscope/cache/LinearAttentionLayer.h"
#include "kvscope/cache/StaticLayer.h"
#include "kvscope/cache/StaticSlidingWindowLayer.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kvscope::cache {
namespace {

using test::rangeStates;
using test::refuses;
using test::states;
using test::values;
using test::Values;

using Layers = std::vector<std::unique_ptr<CacheLayer>>;

template <typename... L> Layers makeLayers(std::unique_ptr<L>... layers) {
    Layers out;
    (out.push_back(std::move(layers)), ...);
    return out;
}

/// A dynamic layer that records prefetch, update and offload calls in a shared log ("P1", "U0", "O0").
class SpyLayer : public DynamicLayer {
public:
    SpyLayer(int index, bool sliding, std::vector<std::string>& log)
        : m_index(index), m_sliding(sliding), m_log(log) {}
    bool isSliding() const override { return m_sliding; }
    KeyValueStates update(const at::Tensor& keys, const at::Tensor& values) override {
        m_log.push_back("U" + std::to_string(m_index));
        return DynamicLayer::update(keys, values);
    }
    void offload() override {
        m_log.push_back("O" + std::to_string(m_index));
        DynamicLayer::offload();
    }
    void prefetch() override {
        m_log.push_back("P" + std::to_string(m_index));
        DynamicLayer::prefetch();
    }

private:
    int m_index;
    bool m_sliding;
    std::vector<std::string>& m_log;
};

const std::vector<bool> kMixedSliding{true, false, true, true, false, true}; // hf-cache.md 1.3.7

Layers spyLayers(const std::vector<bool>& sliding, std::vector<std::string>& log) {
    Layers layers;
    for (size_t i = 0; i < sliding.size(); ++i) {
        layers.push_back(std::make_unique<SpyLayer>(static_cast<int>(i), sliding[i], log));
    }
    return layers;
}

/// Sliding layers are DynamicSlidingWindowLayer(4), the others DynamicLayer.
Layers slidingPattern(const std::vector<bool>& sliding) {
    Layers layers;
    for (bool s : sliding) {
        if (s) {
            layers.push_back(std::make_unique<DynamicSlidingWindowLayer>(4));
        } else {
            layers.push_back(std::make_unique<DynamicLayer>());
        }
    }
    return layers;
}

TEST(CacheTest, NeedsLayersOrAFactory) {
    EXPECT_TRUE(
        refuses([] { Cache cache(Cache::LayerFactory{}); }, ErrorKind::Value, {"layer_class_to_replicate"}));
    Cache cache(Layers{});
    EXPECT_EQ(cache.size(), 0u);
    EXPECT_EQ(cache.typeName(), "Cache");
    EXPECT_FALSE(cache.offloading());
    EXPECT_FALSE(cache.offloadOnlyNonSliding()) << "nothing moves without offloading";
}

TEST(CacheTest, OffloadOrderOnlyNonSliding) { // hf-cache.md 1.3.7, left column
    Cache cache(slidingPattern(kMixedSliding), Offloading::OnlyNonSliding);
    EXPECT_EQ(cache.isSliding(), kMixedSliding);
    // Before updating layer i the reference prefetches `prefetch(i + 1)`'s target.
    const std::vector<int64_t> prefetched{1, 4, 4, 4, 1, 1};
    const std::vector<bool> offloaded{false, true, false, false, true, false};
    for (int64_t i = 0; i < 6; ++i) {
        SCOPED_TRACE("update on layer " + std::to_string(i));
        EXPECT_EQ(cache.prefetchTarget(i + 1), std::optional<int64_t>(prefetched[static_cast<size_t>(i)]));
        EXPECT_EQ(cache.offloadsAfterUpdate(i), offloaded[static_cast<size_t>(i)]);
    }
}

TEST(CacheTest, OffloadOrderAllLayers) { // hf-cache.md 1.3.7, right column
    Cache cache(slidingPattern(kMixedSliding), Offloading::AllLayers);
    const std::vector<int64_t> prefetched{1, 2, 3, 4, 5, 0};
    for (int64_t i = 0; i < 6; ++i) {
        SCOPED_TRACE("update on layer " + std::to_string(i));
        EXPECT_EQ(cache.prefetchTarget(i + 1), std::optional<int64_t>(prefetched[static_cast<size_t>(i)]));
        EXPECT_TRUE(cache.offloadsAfterUpdate(i));
    }
}

TEST(CacheTest, AllSlidingLayersHaveNoPrefetchTarget) {
    // The reference crashes here (`ValueError: False is not in list`); the engine prefetches nothing.
    Cache cache(slidingPattern({true, true, true}), Offloading::OnlyNonSliding);
    for (int64_t i = 0; i < 3; ++i) {
        EXPECT_EQ(cache.prefetchTarget(i + 1), std::nullopt);
        EXPECT_FALSE(cache.offloadsAfterUpdate(i));
    }
    Cache all(slidingPattern({true, true, true}), Offloading::AllLayers);
    EXPECT_EQ(all.prefetchTarget(1), std::optional<int64_t>(1));
    EXPECT_EQ(all.prefetchTarget(3), std::optional<int64_t>(0));
}

TEST(CacheTest, UpdatePrefetchesUpdatesThenOffloadsOnlyNonSliding) {
    std::vector<std::string> log;
    Cache cache(spyLayers(kMixedSliding, log), Offloading::OnlyNonSliding);
    for (int64_t i = 0; i < 6; ++i) {
        cache.update(states({1}), states({1}), i);
    }
    EXPECT_EQ(log, (std::vector<std::string>{"P1", "U0",       //
                                             "P4", "U1", "O1", //
                                             "P4", "U2",       //
                                             "P4", "U3",       //
                                             "P1", "U4", "O4", //
                                             "P1", "U5"}));
}

TEST(CacheTest, UpdatePrefetchesUpdatesThenOffloadsEveryLayer) {
    std::vector<std::string> log;
    Cache cache(spyLayers(kMixedSliding, log), Offloading::AllLayers);
    for (int64_t i = 0; i < 6; ++i) {
        cache.update(states({1}), states({1}), i);
    }
    EXPECT_EQ(log, (std::vector<std::string>{"P1", "U0", "O0", "P2", "U1", "O1", "P3", "U2", "O2", "P4", "U3",
                                             "O3", "P5", "U4", "O4", "P0", "U5", "O5"}));
}

TEST(CacheTest, AllSlidingUpdatesNeitherPrefetchNorOffload) {
    std::vector<std::string> log;
    Cache cache(spyLayers({true, true}, log), Offloading::OnlyNonSliding);
    cache.update(states({1}), states({1}), 0);
    cache.update(states({1}), states({1}), 1);
    EXPECT_EQ(log, (std::vector<std::string>{"U0", "U1"}));
}

TEST(CacheTest, WithoutOffloadingNothingMoves) {
    std::vector<std::string> log;
    Cache cache(spyLayers(kMixedSliding, log));
    cache.update(states({1}), states({1}), 1);
    cache.update(states({1}), states({1}), 4);
    EXPECT_EQ(log, (std::vector<std::string>{"U1", "U4"}));
}

TEST(CacheTest, OffloadedStatesAreStillReturnedAndKept) {
    Cache cache(slidingPattern(kMixedSliding), Offloading::AllLayers);
    for (int round = 0; round < 3; ++round) {
        for (int64_t i = 0; i < 6; ++i) {
            cache.update(states({static_cast<float>(round)}), states({static_cast<float>(round)}), i);
        }
    }
    EXPECT_EQ(values(cache.layer(1).asAttention()->keys()), (Values{0, 1, 2}));
    EXPECT_EQ(values(cache.layer(0).asAttention()->keys()), (Values{0, 1, 2}));
    EXPECT_EQ(cache.seqLength(0), 3);
}

TEST(CacheTest, LinearLayersRedirectIndexZeroToTheFirstAttentionLayer) { // hf-cache.md 1.3.6, last row
    Cache cache(makeLayers(std::make_unique<LinearAttentionLayer>(), std::make_unique<DynamicLayer>()));
    cache.update(rangeStates(1, 3), rangeStates(1, 3), 1);
    EXPECT_EQ(cache.seqLength(), 3);
    EXPECT_EQ(cache.seqLength(0), 3);
    EXPECT_EQ(cache.seqLength(1), 3);
    EXPECT_EQ(cache.maskSizes(1, 0), (MaskSizes{4, 0}));
    EXPECT_EQ(cache.isSliding(), (std::vector<bool>{false, false}));
}

TEST(CacheTest, LinearLayerRefusals) {
    Cache cache(makeLayers(std::make_unique<DynamicLayer>(), std::make_unique<LinearAttentionLayer>()));
    cache.update(rangeStates(1, 2), rangeStates(1, 2), 0);
    EXPECT_TRUE(refuses([&] { (void)cache.seqLength(1); }, ErrorKind::Value,
                        {"get_seq_length", "layer index 1", "LinearAttention"}));
    EXPECT_TRUE(
        refuses([&] { (void)cache.maskSizes(1, 1); }, ErrorKind::Value, {"get_mask_sizes", "layer index 1"}));
    EXPECT_TRUE(refuses([&] { (void)cache.hasPreviousState(0); }, ErrorKind::Value,
                        {"has_previous_state", "layer index 0", "Attention layer"}));
    EXPECT_TRUE(refuses(
        [&] {
            cache.updateConvState(at::ones({1, 1, 4}), 0);
        },
        ErrorKind::Value, {"update_conv_state", "non-LinearAttention", "DynamicLayer"}));
    EXPECT_TRUE(refuses(
        [&] {
            cache.updateRecurrentState(at::ones({1, 2}), 0);
        },
        ErrorKind::Value, {"update_recurrent_state", "DynamicLayer"}));
    EXPECT_TRUE(refuses([&] { cache.update(states({1}), states({1}), 1); }, ErrorKind::Attribute,
                        {"layer 1", "LinearAttentionLayer", "update"}));
    EXPECT_TRUE(
        refuses([&] { (void)cache.maxCacheShape(1); }, ErrorKind::Attribute, {"LinearAttentionLayer"}));
    // The cache is still usable.
    EXPECT_EQ(cache.seqLength(0), 2);
    EXPECT_FALSE(cache.hasPreviousState(1));
    EXPECT_EQ(values(cache.updateConvState(at::tensor({1.f, 2.f}).view({1, 1, 2}), 1)), (Values{1, 2}));
    EXPECT_TRUE(cache.hasPreviousState(1));
    EXPECT_TRUE(cache.hasPreviousState());   // the last linear-attention layer
    EXPECT_FALSE(cache.hasPreviousState(7)); // beyond the layers
}

TEST(CacheTest, OnlyOneKindOfLayerRefusals) {
    Cache linear(makeLayers(std::make_unique<LinearAttentionLayer>()));
    EXPECT_TRUE(
        refuses([&] { (void)linear.seqLength(0); }, ErrorKind::Value, {"only contain LinearAttention"}));
    EXPECT_TRUE(refuses([&] { (void)linear.maskSizes(1, 0); }, ErrorKind::Value, {"get_mask_sizes"}));
    Cache attention(makeLayers(std::make_unique<DynamicLayer>()));
    EXPECT_TRUE(
        refuses([&] { (void)attention.hasPreviousState(); }, ErrorKind::Value, {"only contain Attention"}));
}

TEST(CacheTest, LayerIndicesFollowPythonListIndexing) {
    Cache cache(makeLayers(std::make_unique<DynamicLayer>(), std::make_unique<DynamicLayer>()));
    cache.update(rangeStates(1, 3), rangeStates(1, 3), -1); // the last layer
    EXPECT_EQ(cache.seqLength(1), 3);
    EXPECT_EQ(cache.seqLength(0), 0);
    EXPECT_TRUE(refuses([&] { cache.update(states({1}), states({1}), 2); }, ErrorKind::Index,
                        {"layer index 2", "2 layers"}));
    EXPECT_TRUE(
        refuses([&] { cache.update(states({1}), states({1}), -3); }, ErrorKind::Index, {"layer index -3"}));
    // Indices past the end answer as an empty layer would.
    EXPECT_EQ(cache.seqLength(5), 0);
    EXPECT_EQ(cache.maskSizes(2, 5), (MaskSizes{2, 0}));
    EXPECT_EQ(cache.maxCacheShape(5), -1);
}

TEST(CacheTest, MaxBatchSize) {
    Cache empty(Layers{});
    EXPECT_TRUE(refuses([&] { (void)empty.maxBatchSize(); }, ErrorKind::Index));
    Cache statics(makeLayers(std::make_unique<StaticLayer>(4), std::make_unique<StaticLayer>(4)));
    EXPECT_TRUE(refuses([&] { (void)statics.maxBatchSize(); }, ErrorKind::Attribute, {"max_batch_size"}));
    statics.update(at::ones({2, 1, 1, 1}), at::ones({2, 1, 1, 1}), 0);
    statics.update(at::ones({3, 1, 1, 1}), at::ones({3, 1, 1, 1}), 1);
    EXPECT_TRUE(
        refuses([&] { (void)statics.maxBatchSize(); }, ErrorKind::Value, {"not consistent", "[2, 3]"}));
    Cache consistent(makeLayers(std::make_unique<StaticLayer>(4), std::make_unique<LinearAttentionLayer>()));
    consistent.update(at::ones({2, 1, 1, 1}), at::ones({2, 1, 1, 1}), 0);
    consistent.updateConvState(at::ones({2, 3, 4}), 1);
    EXPECT_EQ(consistent.maxBatchSize(), 2);
    Cache dynamic(makeLayers(std::make_unique<DynamicLayer>()));
    dynamic.update(states({1}), states({1}), 0);
    EXPECT_TRUE(refuses([&] { (void)dynamic.maxBatchSize(); }, ErrorKind::Attribute, {"'DynamicLayer'"}));
}

TEST(CacheTest, MaxCacheLenIsTheLongestStaticLayer) {
    Cache cache(makeLayers(std::make_unique<StaticSlidingWindowLayer>(10, 4),
                           std::make_unique<StaticLayer>(10), std::make_unique<StaticLayer>(6)));
    EXPECT_EQ(cache.maxCacheLen(), 10);
    EXPECT_EQ(cache.maxCacheShape(0), 4);
    EXPECT_EQ(cache.maxCacheShape(2), 6);
    Cache empty(Layers{});
    EXPECT_TRUE(refuses([&] { (void)empty.maxCacheLen(); }, ErrorKind::Value, {"max_cache_len"}));
    Cache dynamic(makeLayers(std::make_unique<StaticLayer>(4), std::make_unique<DynamicLayer>()));
    EXPECT_TRUE(refuses([&] { (void)dynamic.maxCacheLen(); }, ErrorKind::Attribute, {"'DynamicLayer'"}));
}

TEST(CacheTest, CompileableAndInitialized) {
    EXPECT_FALSE(Cache(Layers{}).isCompileable());
    EXPECT_FALSE(Cache(Layers{}).isInitialized());
    EXPECT_TRUE(Cache(makeLayers(std::make_unique<StaticLayer>(4), std::make_unique<LinearAttentionLayer>()))
                    .isCompileable());
    EXPECT_FALSE(Cache(makeLayers(std::make_unique<StaticLayer>(4), std::make_unique<DynamicLayer>()))
                     .isCompileable());
    Cache cache(makeLayers(std::make_unique<DynamicLayer>(), std::make_unique<LinearAttentionLayer>()));
    EXPECT_FALSE(cache.isInitialized()); // stops at the first uninitialised attention layer
    cache.update(states({1}), states({1}), 0);
    // Reference: `LinearAttentionLayer` has no attribute `is_initialized`.
    EXPECT_TRUE(refuses([&] { (void)cache.isInitialized(); }, ErrorKind::Attribute, {"is_initialized"}));
}

TEST(CacheTest, EarlyInitializationWithScalars) {
    Cache cache(makeLayers(std::make_unique<StaticLayer>(10), std::make_unique<DynamicLayer>(),
                           std::make_unique<StaticSlidingWindowLayer>(10, 4)));
    cache.earlyInitialization(2, 3, 8, at::kDouble, at::kCPU);
    EXPECT_TRUE(cache.isInitialized());
    const AttentionLayer& staticLayer = *cache.layer(0).asAttention();
    EXPECT_EQ(staticLayer.keys().sizes(), (at::IntArrayRef{2, 3, 10, 8}));
    EXPECT_EQ(staticLayer.values().sizes(), (at::IntArrayRef{2, 3, 10, 8}));
    EXPECT_EQ(staticLayer.keys().scalar_type(), at::kDouble);
    EXPECT_EQ(staticLayer.keys().abs().sum().item<double>(), 0.0);
    EXPECT_EQ(staticLayer.seqLength(), 0);
    EXPECT_EQ(cache.layer(2).asAttention()->keys().sizes(), (at::IntArrayRef{2, 3, 4, 8}));
    EXPECT_EQ(cache.seqLength(1), 0);
    EXPECT_TRUE(cache.layer(1).asAttention()->isInitialized());
    EXPECT_EQ(cache.maskSizes(2, 1), (MaskSizes{2, 0}));
    // Then normal updates.
    at::Tensor keys = at::ones({2, 3, 2, 8}, at::kDouble);
    KeyValueStates dynamicOut = cache.update(keys, keys, 1);
    EXPECT_EQ(dynamicOut.keys.sizes(), (at::IntArrayRef{2, 3, 2, 8}));
    EXPECT_EQ(cache.seqLength(1), 2);
    KeyValueStates staticOut = cache.update(keys, keys, 0);
    EXPECT_EQ(staticOut.keys.sizes(), (at::IntArrayRef{2, 3, 10, 8}));
    EXPECT_EQ(staticOut.keys.sum().item<double>(), 2 * 3 * 2 * 8);
    EXPECT_EQ(cache.seqLength(0), 2);
}

TEST(CacheTest, EarlyInitializationWithPerLayerLists) {
    Cache cache(makeLayers(std::make_unique<StaticLayer>(4), std::make_unique<StaticLayer>(4),
                           std::make_unique<LinearAttentionLayer>()));
    cache.earlyInitialization(1, {1, 2, 3}, {4, 8, 5}, at::kFloat, at::kCPU);
    EXPECT_EQ(cache.layer(0).asAttention()->keys().sizes(), (at::IntArrayRef{1, 1, 4, 4}));
    EXPECT_EQ(cache.layer(1).asAttention()->keys().sizes(), (at::IntArrayRef{1, 2, 4, 8}));
    EXPECT_TRUE(cache.layer(2).asLinearAttention()->isConvStatesInitialized());
    EXPECT_FALSE(cache.layer(2).asLinearAttention()->hasPreviousState());
    EXPECT_EQ(cache.maxBatchSize(), 1);
}

TEST(CacheTest, EarlyInitializationRefusesListsOfTheWrongLength) {
    Cache cache(makeLayers(std::make_unique<StaticLayer>(4), std::make_unique<StaticLayer>(4)));
    EXPECT_TRUE(refuses(
        [&] {
            cache.earlyInitialization(1, {2}, {4, 4}, at::kFloat, at::kCPU);
        },
        ErrorKind::Value, {"`num_head`", "length 1", "2 layers"}));
    EXPECT_TRUE(refuses(
        [&] {
            cache.earlyInitialization(1, {2, 2}, {4, 4, 4}, at::kFloat, at::kCPU);
        },
        ErrorKind::Value, {"`head_dim`", "length 3", "2 layers"}));
    EXPECT_FALSE(cache.layer(0).asAttention()->isInitialized());
    EXPECT_FALSE(cache.layer(1).asAttention()->isInitialized());
    cache.earlyInitialization(1, {2, 2}, {4, 4}, at::kFloat, at::kCPU);
    EXPECT_TRUE(cache.isInitialized());
}

TEST(CacheTest, EarlyInitializationOfALazyCacheWithNoLayersDoesNothing) {
    Cache cache([] { return std::make_unique<DynamicLayer>(); });
    cache.earlyInitialization(1, 2, 4, at::kFloat, at::kCPU);
    EXPECT_EQ(cache.size(), 0u);
    EXPECT_FALSE(cache.isInitialized());
}

TEST(CacheTest, WholeCacheOperationsReachEveryLayer) {
    Cache cache(makeLayers(std::make_unique<DynamicLayer>(), std::make_unique<DynamicLayer>()));
    at::Tensor rows = at::tensor({1.f, 2.f, 3.f, 10.f, 20.f, 30.f}).view({2, 1, 3, 1});
    cache.update(rows, rows, 0);
    cache.update(rows + 100, rows + 100, 1);
    cache.crop(2);
    EXPECT_EQ(cache.seqLength(0), 2);
    EXPECT_EQ(cache.seqLength(1), 2);
    cache.reorder(at::tensor({int64_t{1}, int64_t{0}}));
    EXPECT_EQ(values(cache.layer(0).asAttention()->keys()), (Values{10, 20, 1, 2}));
    EXPECT_EQ(values(cache.layer(1).asAttention()->keys()), (Values{110, 120, 101, 102}));
    cache.batchSelectIndices(at::tensor({int64_t{1}}));
    EXPECT_EQ(values(cache.layer(1).asAttention()->keys()), (Values{101, 102}));
    cache.batchRepeatInterleave(2);
    EXPECT_EQ(values(cache.layer(0).asAttention()->keys()), (Values{1, 2, 1, 2}));
    cache.reset();
    EXPECT_EQ(values(cache.layer(0).asAttention()->keys()), (Values{0, 0, 0, 0}));
}

/// Logs what it observes into the spy layers' log: "B0" before, "A0 1/1" after (tokens in / returned),
/// "T0 offloaded" once the layer has been taken out (or "stayed").
class LoggingObserver : public CacheObserver {
public:
    explicit LoggingObserver(std::vector<std::string>& log) : m_log(log) {}
    void beforeUpdate(std::size_t index, const CacheLayer&) override { m_log.push_back("B" + std::to_string(index)); }
    void afterUpdate(std::size_t index, CacheLayer&, const UpdateFacts& facts) override {
        m_log.push_back("A" + std::to_string(index) + " " + std::to_string(facts.newTokens) + "/" +
                        std::to_string(facts.returnedTokens));
    }
    void afterTakeOut(std::size_t index, const CacheLayer&, TakeOut where) override {
        m_log.push_back("T" + std::to_string(index) + (where == TakeOut::Stayed ? " stayed" : " offloaded"));
    }

private:
    std::vector<std::string>& m_log;
};

TEST(CacheTest, ObserversSeeEveryUpdateAroundTheOffloadSteps) {
    std::vector<std::string> log;
    Cache cache(spyLayers({true, false}, log), Offloading::OnlyNonSliding);
    LoggingObserver observer(log);
    cache.addObserver(observer);
    cache.update(states({1, 2}), states({1, 2}), 0);
    cache.update(states({1}), states({1}), 1);
    EXPECT_EQ(log, (std::vector<std::string>{"B0", "P1", "U0", "A0 2/2", "T0 stayed", //
                                             "B1", "P1", "U1", "A1 1/1", "O1", "T1 offloaded"}));
    cache.removeObserver(observer);
    log.clear();
    cache.update(states({1}), states({1}), 0);
    EXPECT_EQ(log, (std::vector<std::string>{"P1", "U0"})) << "a removed observer hears nothing";
}

TEST(CacheTest, AnObserverCanActOnALayerAfterItsUpdate) {
    // What an eviction policy does: keep at most two tokens after every update, without knowing
    // whether or how the cache offloads.
    class KeepTwo : public CacheObserver {
    public:
        void afterUpdate(std::size_t, CacheLayer& layer, const UpdateFacts&) override {
            if (layer.asAttention()->seqLength() > 2) {
                layer.crop(2);
            }
        }
    } keepTwo;
    for (const Offloading offloading : {Offloading::Off, Offloading::AllLayers}) {
        Cache cache(makeLayers(std::make_unique<DynamicLayer>()), offloading);
        cache.addObserver(keepTwo);
        cache.update(states({1, 2, 3}), states({1, 2, 3}), 0);
        cache.update(states({4}), states({4}), 0);
        EXPECT_EQ(cache.seqLength(0), 2);
        cache.layer(0).prefetch();
        EXPECT_EQ(values(cache.layer(0).asAttention()->keys()), (Values{1, 2}));
    }
}

} // namespace
} // namespace kvscope::cache
