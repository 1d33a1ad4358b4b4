// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/DynamicCache.h"

#include "CacheTestHelpers.h"
#include "kvscope/cache/AttentionLayer.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <string>
#include <vector>

namespace kvscope::cache {
namespace {

using test::rangeStates;
using test::refuses;
using test::states;
using test::values;
using test::Values;
using test::configWithTypes;
using test::typeNames;

TEST(DynamicCacheTest, EmptyCache) { // hf-cache.md 1.3.6
    DynamicCache cache;
    EXPECT_EQ(cache.typeName(), "DynamicCache");
    EXPECT_EQ(cache.size(), 0u);
    EXPECT_EQ(cache.seqLength(), 0);
    EXPECT_EQ(cache.maskSizes(5, 0), (MaskSizes{5, 0}));
    EXPECT_EQ(cache.maxCacheShape(), -1);
    EXPECT_FALSE(cache.isCompileable());
    EXPECT_FALSE(cache.isInitialized());
    EXPECT_FALSE(cache.offloading());
    EXPECT_FALSE(cache.offloadOnlyNonSliding()) << "nothing moves without offloading";
}

TEST(DynamicCacheTest, UpdateOfLayerTwoCreatesLayersLazily) {
    DynamicCache cache;
    cache.update(rangeStates(1, 2), rangeStates(1, 2), 2);
    EXPECT_EQ(cache.size(), 3u);
    EXPECT_EQ(typeNames(cache), (std::vector<std::string>{"DynamicLayer", "DynamicLayer", "DynamicLayer"}));
    EXPECT_EQ(cache.seqLength(0), 0);
    EXPECT_EQ(cache.seqLength(2), 2);
    EXPECT_FALSE(cache.isInitialized()); // layers 0 and 1 were never updated
    EXPECT_EQ(cache.maskSizes(1, 2), (MaskSizes{3, 0}));
    EXPECT_EQ(cache.maskSizes(1, 7), (MaskSizes{1, 0}));
    cache.update(states({1}), states({1}), 0);
    cache.update(states({1}), states({1}), 1);
    EXPECT_TRUE(cache.isInitialized());
}

TEST(DynamicCacheTest, InterleavedLayersKeepTheirOwnStates) { // HF test_dynamic_cache S2
    DynamicCache cache;
    cache.update(rangeStates(1, 2), rangeStates(1, 2), 0);
    cache.update(states({10, 20}), states({10, 20}), 1);
    cache.update(states({3}), states({3}), 0);
    cache.update(states({30}), states({30}), 1);
    KeyValueStates l0 = cache.update(states({4}), states({4}), 0);
    KeyValueStates l1 = cache.update(states({40}), states({40}), 1);
    EXPECT_EQ(values(l0.keys), (Values{1, 2, 3, 4}));
    EXPECT_EQ(values(l1.keys), (Values{10, 20, 30, 40}));
}

TEST(DynamicCacheTest, LayerKindsFromLayerTypes) { // hf-cache.md 1.3.6
    DynamicCache cache(
        configWithTypes({"sliding_attention", "full_attention", "chunked_attention", "linear_attention"}, 4));
    EXPECT_EQ(typeNames(cache),
              (std::vector<std::string>{"DynamicSlidingWindowLayer", "DynamicLayer",
                                        "DynamicSlidingWindowLayer", "LinearAttentionLayer"}));
    EXPECT_EQ(cache.isSliding(), (std::vector<bool>{true, false, true, false}));
    EXPECT_EQ(cache.maxCacheShape(0), 4);
    EXPECT_EQ(cache.maxCacheShape(1), -1);
    EXPECT_EQ(cache.maxCacheShape(2), 4);
}

TEST(DynamicCacheTest, EveryWindowedLayerUsesSlidingWindowFirst) {
    // `sliding_window or attention_chunk_size`: chunked layers take the sliding window when one is set.
    config::ModelConfig config = configWithTypes({"chunked_attention", "sliding_attention"}, 4);
    config.attentionChunkSize = 8;
    DynamicCache cache(config);
    EXPECT_EQ(cache.maxCacheShape(0), 4);
    EXPECT_EQ(cache.maxCacheShape(1), 4);
    config.slidingWindow = 0; // a zero window counts as absent
    DynamicCache chunked(config);
    EXPECT_EQ(chunked.maxCacheShape(0), 8);
    EXPECT_EQ(chunked.maxCacheShape(1), 8);
}

TEST(DynamicCacheTest, WithoutLayerTypesAChunkSizeMakesEveryLayerSliding) {
    config::ModelConfig config;
    config.numHiddenLayers = 2;
    config.attentionChunkSize = 3;
    DynamicCache cache(config);
    EXPECT_EQ(typeNames(cache),
              (std::vector<std::string>{"DynamicSlidingWindowLayer", "DynamicSlidingWindowLayer"}));
    EXPECT_EQ(cache.maxCacheShape(0), 3);
    EXPECT_EQ(cache.maxCacheShape(1), 3);
}

TEST(DynamicCacheTest, WithoutLayerTypesOrWindowEveryLayerIsBuiltUpFront) {
    config::ModelConfig config;
    config.numHiddenLayers = 3;
    DynamicCache cache(config);
    EXPECT_EQ(typeNames(cache), (std::vector<std::string>{"DynamicLayer", "DynamicLayer", "DynamicLayer"}));
    EXPECT_TRUE(
        refuses([&] { cache.update(states({1}), states({1}), 3); }, ErrorKind::Index, {"layer index 3"}));
}

TEST(DynamicCacheTest, ChunkedMaskSizesAfterAPrefill) {
    // HF test_chunked_mask_with_left_padding_decoding: chunk 4, 8 prefilled tokens, then q = 1.
    config::ModelConfig config;
    config.attentionChunkSize = 4;
    DynamicCache cache(config);
    cache.update(rangeStates(1, 8), rangeStates(1, 8), 0);
    EXPECT_EQ(cache.seqLength(), 8);
    EXPECT_EQ(cache.maskSizes(1, 0), (MaskSizes{4, 5}));
}

TEST(DynamicCacheTest, SharedKvLayersAreDropped) {
    config::ModelConfig config =
        configWithTypes({"sliding_attention", "full_attention", "sliding_attention", "full_attention"}, 4);
    config.numKvSharedLayers = 2;
    DynamicCache cache(config);
    EXPECT_EQ(typeNames(cache), (std::vector<std::string>{"DynamicSlidingWindowLayer", "DynamicLayer"}));
}

TEST(DynamicCacheTest, ZeroSharedKvLayersKeepsNoneSoTheCacheIsLazy) {
    // Python's `layer_types[:-0]` is empty: no layers, and the cache replicates DynamicLayer.
    config::ModelConfig config = configWithTypes({"sliding_attention", "full_attention"}, 4);
    config.numKvSharedLayers = 0;
    DynamicCache cache(config);
    EXPECT_EQ(cache.size(), 0u);
    cache.update(states({1}), states({1}), 1);
    EXPECT_EQ(typeNames(cache), (std::vector<std::string>{"DynamicLayer", "DynamicLayer"}));
}

TEST(DynamicCacheTest, LinearAndHybridLayerTypes) {
    DynamicCache cache(configWithTypes({"hybrid", "mamba", "conv", "moe", "anything_else"}, std::nullopt));
    EXPECT_EQ(typeNames(cache),
              (std::vector<std::string>{"LinearAttentionAndFullAttentionLayer", "LinearAttentionLayer",
                                        "LinearAttentionLayer", "LinearAttentionLayer", "DynamicLayer"}));
    EXPECT_FALSE(cache.isCompileable());
}

TEST(DynamicCacheTest, SlidingLayerWithoutAnyWindowIsATypeError) {
    // Reference: DynamicSlidingWindowLayer(sliding_window=None) -> torch.tensor(None, dtype=long) raises
    // TypeError ('NoneType' object cannot be interpreted as an integer).
    EXPECT_TRUE(refuses([] { DynamicCache cache(configWithTypes({"sliding_attention"}, std::nullopt)); },
                        ErrorKind::Type, {"sliding_attention"}));
}

TEST(DynamicCacheTest, CropStopsAtTheFirstRefusingLayerLikeTheReference) {
    DynamicCache cache(configWithTypes({"full_attention", "sliding_attention"}, 4));
    cache.update(rangeStates(1, 5), rangeStates(1, 5), 0);
    cache.update(rangeStates(1, 5), rangeStates(1, 5), 1);
    EXPECT_TRUE(refuses([&] { cache.crop(2); }, ErrorKind::Value, {"DynamicSlidingWindowLayer"}));
    EXPECT_EQ(cache.seqLength(0), 2); // the layers before the refusing one were already cropped
    EXPECT_EQ(cache.seqLength(1), 5);
    EXPECT_EQ(values(cache.layer(1).asAttention()->keys()), (Values{3, 4, 5}));
}

TEST(DynamicCacheTest, OffloadingSettingsAreKept) {
    DynamicCache cache(std::nullopt, Offloading::OnlyNonSliding);
    EXPECT_TRUE(cache.offloading());
    EXPECT_TRUE(cache.offloadOnlyNonSliding());
    KeyValueStates out = cache.update(rangeStates(1, 2), rangeStates(1, 2), 0);
    EXPECT_EQ(values(out.keys), (Values{1, 2}));
    out = cache.update(states({3}), states({3}), 0);
    EXPECT_EQ(values(out.keys), (Values{1, 2, 3}));
}

TEST(DynamicCacheTest, LayersForMatchesTheConstructor) {
    auto layers = DynamicCache::layersFor(configWithTypes({"full_attention", "sliding_attention"}, 6));
    ASSERT_EQ(layers.size(), 2u);
    EXPECT_EQ(layers[0]->typeName(), "DynamicLayer");
    EXPECT_EQ(layers[1]->asAttention()->maxCacheShape(), 6);
}

} // namespace
} // namespace kvscope::cache
