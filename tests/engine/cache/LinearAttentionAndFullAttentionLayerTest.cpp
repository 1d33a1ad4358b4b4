// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/LinearAttentionAndFullAttentionLayer.h"

#include "CacheTestHelpers.h"
#include "kvscope/cache/Cache.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace kvscope::cache {
namespace {

using test::rangeStates;
using test::refuses;
using test::runSteps;
using test::states;
using test::Step;
using test::values;
using test::Values;

at::Tensor conv(const Values& v) {
    return at::tensor(v, at::TensorOptions().dtype(at::kFloat)).view({1, 1, -1});
}

TEST(LinearAttentionAndFullAttentionLayerTest, DescribesItself) {
    LinearAttentionAndFullAttentionLayer layer;
    EXPECT_EQ(layer.typeName(), "LinearAttentionAndFullAttentionLayer");
    EXPECT_FALSE(layer.isCompileable()); // the dynamic attention side makes it non-compileable
    EXPECT_FALSE(layer.isSliding());
    EXPECT_EQ(layer.asAttention(), &layer);
    ASSERT_NE(layer.asLinearAttention(), nullptr);
    EXPECT_EQ(layer.maxCacheShape(), -1);
}

TEST(LinearAttentionAndFullAttentionLayerTest, HoldsBothKindsOfState) {
    LinearAttentionAndFullAttentionLayer layer;
    runSteps(layer, {Step{{1, 2}, {2, 0}, {1, 2}, {1, 2}, 2}});
    LinearAttentionLayer& linear = *layer.asLinearAttention();
    EXPECT_EQ(values(linear.updateConvState(conv({1, 2, 3}))), (Values{1, 2, 3}));
    EXPECT_EQ(values(linear.updateConvState(conv({4}))), (Values{2, 3, 4}));
    runSteps(layer, {Step{{3}, {3, 0}, {1, 2, 3}, {1, 2, 3}, 3}});
    EXPECT_TRUE(linear.hasPreviousState());
    EXPECT_EQ(layer.storedBytes(), (2 * 3 + 3) * static_cast<int64_t>(sizeof(float)));
}

TEST(LinearAttentionAndFullAttentionLayerTest, CropResolvesToTheLinearSideAndDoesNothing) {
    LinearAttentionAndFullAttentionLayer layer;
    layer.update(rangeStates(1, 4), -rangeStates(1, 4));
    layer.crop(1);
    layer.crop(-2);
    EXPECT_EQ(values(layer.keys()), (Values{1, 2, 3, 4}));
    EXPECT_EQ(layer.seqLength(), 4);
}

TEST(LinearAttentionAndFullAttentionLayerTest, ResetClearsBothSides) {
    LinearAttentionAndFullAttentionLayer layer;
    layer.update(rangeStates(1, 3), -rangeStates(1, 3));
    layer.asLinearAttention()->updateConvState(conv({1, 2, 3}));
    layer.reset();
    EXPECT_FALSE(layer.asLinearAttention()->hasPreviousState());
    EXPECT_EQ(values(layer.asLinearAttention()->convStates()), (Values{0, 0, 0}));
    EXPECT_EQ(values(layer.keys()), (Values{0, 0, 0}));
    EXPECT_EQ(layer.seqLength(), 3); // the DynamicLayer side keeps its zeroed length
}

TEST(LinearAttentionAndFullAttentionLayerTest, ReorderAppliesToBothSides) {
    LinearAttentionAndFullAttentionLayer layer;
    at::Tensor rows = at::tensor({1.f, 2.f, 10.f, 20.f}).view({2, 1, 2, 1});
    layer.update(rows, -rows);
    layer.asLinearAttention()->updateConvState(at::tensor({5.f, 6.f, 50.f, 60.f}).view({2, 1, 2}));
    layer.reorder(at::tensor({int64_t{1}, int64_t{0}}));
    EXPECT_EQ(values(layer.keys()), (Values{10, 20, 1, 2}));
    EXPECT_EQ(values(layer.asLinearAttention()->convStates()), (Values{50, 60, 5, 6}));
}

TEST(LinearAttentionAndFullAttentionLayerTest, BatchOperationsComeFromTheDynamicSide) {
    LinearAttentionAndFullAttentionLayer layer;
    at::Tensor rows = at::tensor({1.f, 2.f, 10.f, 20.f}).view({2, 1, 2, 1});
    layer.update(rows, -rows);
    layer.batchSelectIndices(at::tensor({int64_t{1}}));
    EXPECT_EQ(values(layer.keys()), (Values{10, 20}));
    layer.batchRepeatInterleave(3);
    EXPECT_EQ(values(layer.keys()), (Values{10, 20, 10, 20, 10, 20}));
}

TEST(LinearAttentionAndFullAttentionLayerTest, CacheMaxBatchSizeComesFromTheConvState) {
    // Reference: LinearAttentionLayer.lazy_initialization sets `max_batch_size` on the hybrid layer, so
    // Cache.max_batch_size is the conv batch (3 here).
    std::vector<std::unique_ptr<CacheLayer>> layers;
    layers.push_back(std::make_unique<LinearAttentionAndFullAttentionLayer>());
    Cache cache(std::move(layers));
    cache.updateConvState(at::ones({3, 2, 4}), 0);
    EXPECT_EQ(cache.maxBatchSize(), 3);
}

TEST(LinearAttentionAndFullAttentionLayerTest, CacheMaxBatchSizeWithoutConvStateIsAnAttributeError) {
    std::vector<std::unique_ptr<CacheLayer>> layers;
    layers.push_back(std::make_unique<LinearAttentionAndFullAttentionLayer>());
    Cache cache(std::move(layers));
    cache.update(at::ones({2, 1, 1, 1}), at::ones({2, 1, 1, 1}), 0);
    EXPECT_TRUE(refuses([&] { (void)cache.maxBatchSize(); }, ErrorKind::Attribute, {"max_batch_size"}));
}

} // namespace
} // namespace kvscope::cache
