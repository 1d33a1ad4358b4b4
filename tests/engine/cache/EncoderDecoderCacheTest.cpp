// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/EncoderDecoderCache.h"

#include "CacheTestHelpers.h"
#include "kvscope/cache/AttentionLayer.h"
#include "kvscope/cache/DynamicCache.h"
#include "kvscope/cache/StaticCache.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <map>
#include <memory>

namespace kvscope::cache {
namespace {

using test::rangeStates;
using test::refuses;
using test::states;
using test::values;
using test::Values;

std::unique_ptr<Cache> dynamicCache() {
    return std::make_unique<DynamicCache>();
}

std::unique_ptr<Cache> staticCache(int64_t maxCacheLen) {
    config::ModelConfig config;
    config.numHiddenLayers = 1;
    return std::make_unique<StaticCache>(config, maxCacheLen);
}

Values layerKeys(const Cache& cache, size_t layer) {
    return values(cache.layer(layer).asAttention()->keys());
}

TEST(EncoderDecoderCacheTest, IsUpdatedIsEmptyForEmptyCaches) { // hf-cache.md 1.3.6
    EncoderDecoderCache cache(dynamicCache(), dynamicCache());
    EXPECT_TRUE(cache.isUpdatedMap().empty());
    EXPECT_FALSE(cache.isUpdated(0));
    EXPECT_EQ(cache.size(), 0u);
}

TEST(EncoderDecoderCacheTest, IsUpdatedReflectsTheCrossAttentionStates) {
    auto cross = dynamicCache();
    cross->update(states({9, 9, 9}), states({9, 9, 9}), 0);
    EncoderDecoderCache cache(dynamicCache(), std::move(cross));
    EXPECT_EQ(cache.isUpdatedMap(), (std::map<int64_t, bool>{{0, true}}));
    EXPECT_TRUE(cache.isUpdated(0));

    auto partial = dynamicCache();
    partial->update(states({9}), states({9}), 1); // layer 0 is created empty
    EncoderDecoderCache second(dynamicCache(), std::move(partial));
    EXPECT_EQ(second.isUpdatedMap(), (std::map<int64_t, bool>{{0, false}, {1, true}}));
    second.setUpdated(0, true);
    EXPECT_TRUE(second.isUpdated(0));
}

TEST(EncoderDecoderCacheTest, CropCropsOnlyTheSelfAttentionCache) {
    auto cross = dynamicCache();
    cross->update(states({9, 9, 9}), states({9, 9, 9}), 0);
    EncoderDecoderCache cache(dynamicCache(), std::move(cross));
    cache.selfAttentionCache().update(rangeStates(1, 3), rangeStates(1, 3), 0);
    cache.crop(1);
    EXPECT_EQ(layerKeys(cache.selfAttentionCache(), 0), (Values{1}));
    EXPECT_EQ(layerKeys(cache.crossAttentionCache(), 0), (Values{9, 9, 9}));
    EXPECT_EQ(cache.seqLength(), 1);
}

TEST(EncoderDecoderCacheTest, ResetClearsIsUpdatedAndBothCaches) {
    auto cross = dynamicCache();
    cross->update(states({9, 9}), states({9, 9}), 0);
    cross->update(states({8}), states({8}), 1);
    EncoderDecoderCache cache(dynamicCache(), std::move(cross));
    cache.selfAttentionCache().update(rangeStates(1, 2), rangeStates(1, 2), 0);
    cache.reset();
    EXPECT_EQ(cache.isUpdatedMap(), (std::map<int64_t, bool>{{0, false}, {1, false}}));
    EXPECT_EQ(layerKeys(cache.selfAttentionCache(), 0), (Values{0, 0}));
    EXPECT_EQ(layerKeys(cache.crossAttentionCache(), 0), (Values{0, 0}));
    EXPECT_EQ(layerKeys(cache.crossAttentionCache(), 1), (Values{0}));
}

TEST(EncoderDecoderCacheTest, BatchOperationsApplyToBothDynamicCaches) {
    auto cross = dynamicCache();
    at::Tensor crossRows = at::tensor({7.f, 70.f}).view({2, 1, 1, 1});
    cross->update(crossRows, crossRows, 0);
    EncoderDecoderCache cache(dynamicCache(), std::move(cross));
    at::Tensor rows = at::tensor({1.f, 2.f, 10.f, 20.f}).view({2, 1, 2, 1});
    cache.selfAttentionCache().update(rows, rows, 0);
    cache.batchSelectIndices(at::tensor({int64_t{1}}));
    EXPECT_EQ(layerKeys(cache.selfAttentionCache(), 0), (Values{10, 20}));
    EXPECT_EQ(layerKeys(cache.crossAttentionCache(), 0), (Values{70}));
    cache.batchRepeatInterleave(2);
    EXPECT_EQ(layerKeys(cache.selfAttentionCache(), 0), (Values{10, 20, 10, 20}));
    EXPECT_EQ(layerKeys(cache.crossAttentionCache(), 0), (Values{70, 70}));
}

TEST(EncoderDecoderCacheTest, ReorderAppliesToBothCaches) {
    auto cross = dynamicCache();
    at::Tensor crossRows = at::tensor({7.f, 70.f}).view({2, 1, 1, 1});
    cross->update(crossRows, crossRows, 0);
    EncoderDecoderCache cache(staticCache(3), std::move(cross)); // reorder is allowed with a static cache
    at::Tensor rows = at::tensor({1.f, 10.f}).view({2, 1, 1, 1});
    cache.selfAttentionCache().update(rows, rows, 0);
    cache.reorder(at::tensor({int64_t{1}, int64_t{0}}));
    EXPECT_EQ(layerKeys(cache.selfAttentionCache(), 0), (Values{10, 0, 0, 1, 0, 0}));
    EXPECT_EQ(layerKeys(cache.crossAttentionCache(), 0), (Values{70, 7}));
}

TEST(EncoderDecoderCacheTest, CropAndBatchOperationsNeedTwoDynamicCaches) {
    for (bool staticSelf : {true, false}) {
        SCOPED_TRACE(staticSelf ? "static self-attention cache" : "static cross-attention cache");
        auto self = staticSelf ? staticCache(4) : dynamicCache();
        auto cross = staticSelf ? dynamicCache() : staticCache(4);
        self->update(rangeStates(1, 2), rangeStates(1, 2), 0);
        cross->update(rangeStates(5, 6), rangeStates(5, 6), 0);
        EncoderDecoderCache cache(std::move(self), std::move(cross));
        EXPECT_TRUE(refuses([&] { cache.crop(1); }, ErrorKind::Type,
                            {"`crop` is only defined for dynamic cache", "StaticCache", "DynamicCache"}));
        EXPECT_TRUE(
            refuses([&] { cache.batchRepeatInterleave(2); }, ErrorKind::Type, {"`batch_repeat_interleave`"}));
        EXPECT_TRUE(refuses([&] { cache.batchSelectIndices(at::tensor({int64_t{0}})); }, ErrorKind::Type,
                            {"`batch_select_indices`"}));
        EXPECT_EQ(cache.selfAttentionCache().seqLength(), 2); // nothing changed
        EXPECT_EQ(cache.crossAttentionCache().seqLength(), 2);
    }
}

TEST(EncoderDecoderCacheTest, QueriesDelegateToTheSelfAttentionCache) {
    EncoderDecoderCache cache(staticCache(6), dynamicCache());
    cache.selfAttentionCache().update(rangeStates(1, 2), rangeStates(1, 2), 0);
    cache.crossAttentionCache().update(rangeStates(1, 5), rangeStates(1, 5), 0);
    EXPECT_EQ(cache.size(), 1u);
    EXPECT_EQ(cache.seqLength(), 2);
    EXPECT_EQ(cache.maskSizes(1, 0), (MaskSizes{6, 0}));
    EXPECT_EQ(cache.maxCacheShape(), 6);
    EXPECT_EQ(cache.isSliding(), (std::vector<bool>{false}));
    EXPECT_TRUE(cache.isCompileable());
}

TEST(EncoderDecoderCacheTest, BothCachesAreRequired) {
    EXPECT_TRUE(refuses([] { EncoderDecoderCache cache(nullptr, std::make_unique<DynamicCache>()); },
                        ErrorKind::Type, {"not a Cache"}));
    EXPECT_TRUE(refuses([] { EncoderDecoderCache cache(std::make_unique<DynamicCache>(), nullptr); },
                        ErrorKind::Type));
}

} // namespace
} // namespace kvscope::cache
