// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/StaticCache.h"

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

TEST(StaticCacheTest, HybridLayout) { // hf-cache.md 1.3.6
    StaticCache cache(configWithTypes({"sliding_attention", "full_attention", "sliding_attention"}, 4), 10);
    EXPECT_EQ(cache.typeName(), "StaticCache");
    EXPECT_EQ(typeNames(cache), (std::vector<std::string>{"StaticSlidingWindowLayer", "StaticLayer",
                                                          "StaticSlidingWindowLayer"}));
    EXPECT_EQ(cache.maxCacheShape(0), 4);
    EXPECT_EQ(cache.maxCacheShape(1), 10);
    EXPECT_EQ(cache.maxCacheShape(2), 4);
    EXPECT_EQ(cache.maxCacheLen(), 10);
    EXPECT_TRUE(cache.isCompileable());
    EXPECT_EQ(cache.isSliding(), (std::vector<bool>{true, false, true}));
    EXPECT_FALSE(cache.offloading());
    EXPECT_FALSE(cache.offloadOnlyNonSliding()) << "nothing moves without offloading";
    EXPECT_EQ(cache.maskSizes(1, 0), (MaskSizes{4, 0}));
    EXPECT_EQ(cache.maskSizes(1, 1), (MaskSizes{10, 0}));
}

TEST(StaticCacheTest, HybridTestOfHuggingFace) { // hf-cache.md 1.2: [full, sliding], W = 2, max 4
    StaticCache cache(configWithTypes({"full_attention", "sliding_attention"}, 2), 4);
    KeyValueStates full = cache.update(rangeStates(1, 3), rangeStates(1, 3), 0);
    EXPECT_EQ(values(full.keys), (Values{1, 2, 3, 0}));
    KeyValueStates sliding = cache.update(states({10, 20, 30}), states({10, 20, 30}), 1);
    EXPECT_EQ(values(sliding.keys), (Values{10, 20, 30}));
    EXPECT_EQ(values(cache.layer(1).asAttention()->keys()), (Values{20, 30}));
    full = cache.update(states({5}), states({5}), 0);
    EXPECT_EQ(values(full.keys), (Values{1, 2, 3, 5}));
    sliding = cache.update(states({50}), states({50}), 1);
    EXPECT_EQ(values(sliding.keys), (Values{30, 50}));
    EXPECT_EQ(values(cache.layer(1).asAttention()->keys()), (Values{30, 50}));
    sliding = cache.update(states({60, 70}), states({60, 70}), 1);
    EXPECT_EQ(values(sliding.keys), (Values{50, 60, 70}));
    EXPECT_EQ(values(cache.layer(1).asAttention()->keys()), (Values{60, 70}));
    EXPECT_EQ(cache.seqLength(0), 4);
    EXPECT_EQ(cache.seqLength(1), 6);
}

TEST(StaticCacheTest, ChunkedLayerUsesTheChunkSize) { // HF test_hybrid_chunked_cache_extra_cases
    config::ModelConfig config = configWithTypes({"chunked_attention"}, std::nullopt);
    config.attentionChunkSize = 3;
    StaticCache cache(config, 3);
    KeyValueStates out = cache.update(states({10, 20}), states({10, 20}), 0);
    EXPECT_EQ(values(out.keys), (Values{10, 20, 0}));
    EXPECT_EQ(values(cache.layer(0).asAttention()->keys()), (Values{10, 20, 0}));
    out = cache.update(states({30, 40}), states({30, 40}), 0);
    EXPECT_EQ(values(out.keys), (Values{10, 20, 30, 40}));
    EXPECT_EQ(values(cache.layer(0).asAttention()->keys()), (Values{20, 30, 40}));
}

TEST(StaticCacheTest, LayerTypesInferredWithoutLayerTypes) {
    config::ModelConfig config;
    config.numHiddenLayers = 2;
    EXPECT_EQ(typeNames(StaticCache(config, 8)), (std::vector<std::string>{"StaticLayer", "StaticLayer"}));
    config.attentionChunkSize = 3;
    StaticCache chunked(config, 8);
    EXPECT_EQ(typeNames(chunked),
              (std::vector<std::string>{"StaticSlidingWindowLayer", "StaticSlidingWindowLayer"}));
    EXPECT_EQ(chunked.maxCacheShape(0), 3);
    config.slidingWindow = 5; // sliding_window wins over the chunk size
    StaticCache sliding(config, 8);
    EXPECT_EQ(sliding.maxCacheShape(1), 5);
}

TEST(StaticCacheTest, WindowedLayerWithoutItsWindowIsATypeError) {
    EXPECT_TRUE(refuses([] { StaticCache cache(configWithTypes({"sliding_attention"}, std::nullopt), 8); },
                        ErrorKind::Type, {"sliding_attention", "sliding_window"}));
    // Chunked layers read attention_chunk_size only, even when a sliding window is set.
    EXPECT_TRUE(refuses([] { StaticCache cache(configWithTypes({"chunked_attention"}, 4), 8); },
                        ErrorKind::Type, {"chunked_attention", "attention_chunk_size"}));
}

TEST(StaticCacheTest, LinearTypesAndEverythingElse) {
    // `hybrid` keeps its linear-attention states as in Transformers 5.18 (the seed built a plain StaticLayer;
    // docs/transformers-release.md, case static_hybrid_layer).
    StaticCache cache(configWithTypes({"mamba", "conv", "linear_attention", "moe", "hybrid"}, std::nullopt),
                      8);
    EXPECT_EQ(typeNames(cache),
              (std::vector<std::string>{"LinearAttentionLayer", "LinearAttentionLayer", "LinearAttentionLayer",
                                        "LinearAttentionLayer", "LinearAttentionAndStaticFullAttentionLayer"}));
    EXPECT_TRUE(cache.isCompileable());
}

TEST(StaticCacheTest, SharedKvLayersAreDropped) {
    config::ModelConfig config =
        configWithTypes({"full_attention", "sliding_attention", "full_attention"}, 4);
    config.numKvSharedLayers = 1;
    EXPECT_EQ(typeNames(StaticCache(config, 8)),
              (std::vector<std::string>{"StaticLayer", "StaticSlidingWindowLayer"}));
    config.numKvSharedLayers = 0;
    EXPECT_EQ(StaticCache(config, 8).size(), 0u);
}

TEST(StaticCacheTest, CropIsRefusedAndTheCacheStaysUsable) {
    StaticCache cache(configWithTypes({"full_attention"}, std::nullopt), 4);
    cache.update(rangeStates(1, 2), rangeStates(1, 2), 0);
    EXPECT_TRUE(refuses([&] { cache.crop(1); }, ErrorKind::Attribute, {"crop"}));
    EXPECT_TRUE(
        refuses([&] { cache.batchRepeatInterleave(2); }, ErrorKind::Attribute, {"batch_repeat_interleave"}));
    KeyValueStates out = cache.update(states({3}), states({3}), 0);
    EXPECT_EQ(values(out.keys), (Values{1, 2, 3, 0}));
}

TEST(StaticCacheTest, OverflowIsRefusedAndResetStartsOver) {
    StaticCache cache(configWithTypes({"full_attention", "sliding_attention"}, 2), 3);
    cache.update(rangeStates(1, 3), rangeStates(1, 3), 0);
    EXPECT_TRUE(
        refuses([&] { cache.update(states({4}), states({4}), 0); }, ErrorKind::Index, {"index 3", "size 3"}));
    EXPECT_EQ(cache.seqLength(0), 3);
    cache.reset();
    EXPECT_EQ(cache.seqLength(0), 0);
    KeyValueStates out = cache.update(states({7}), states({7}), 0);
    EXPECT_EQ(values(out.keys), (Values{7, 0, 0}));
}

TEST(StaticCacheTest, EarlyInitializationAllocatesEveryLayer) {
    StaticCache cache(configWithTypes({"sliding_attention", "full_attention"}, 4), 10);
    cache.earlyInitialization(2, 3, 8, at::kFloat, at::kCPU);
    EXPECT_TRUE(cache.isInitialized());
    EXPECT_EQ(cache.layer(0).asAttention()->keys().sizes(), (at::IntArrayRef{2, 3, 4, 8}));
    EXPECT_EQ(cache.layer(1).asAttention()->keys().sizes(), (at::IntArrayRef{2, 3, 10, 8}));
    EXPECT_EQ(cache.seqLength(0), 0);
    EXPECT_EQ(cache.seqLength(1), 0);
    EXPECT_EQ(cache.maxBatchSize(), 2);
}

} // namespace
} // namespace kvscope::cache
