// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/LinearAttentionLayer.h"

#include "CacheTestHelpers.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace kvscope::cache {
namespace {

using test::refuses;
using test::values;
using test::Values;

/// Conv states `[1, 1, n]` (batch 1, one channel) holding `values`.
at::Tensor convInLinearAttentionLayer(const Values& v) {
    return at::tensor(v, at::TensorOptions().dtype(at::kFloat)).view({1, 1, -1});
}

TEST(LinearAttentionLayerTest, DescribesItself) {
    LinearAttentionLayer layer;
    EXPECT_EQ(layer.typeName(), "LinearAttentionLayer");
    EXPECT_TRUE(layer.isCompileable());
    EXPECT_FALSE(layer.isSliding());
    EXPECT_EQ(layer.asAttention(), nullptr);
    EXPECT_EQ(layer.asLinearAttention(), &layer);
    EXPECT_FALSE(layer.hasPreviousState());
    EXPECT_FALSE(layer.isConvStatesInitialized());
    EXPECT_FALSE(layer.isRecurrentStatesInitialized());
    EXPECT_FALSE(layer.convBatchSize().has_value());
    EXPECT_EQ(layer.storedBytes(), 0);
}

TEST(LinearAttentionLayerTest, ConvStateRollingTable) { // hf-cache.md 1.3.9, kernel 4
    LinearAttentionLayer layer;
    EXPECT_EQ(values(layer.updateConvState(convInLinearAttentionLayer({1, 2, 3, 4}))), (Values{1, 2, 3, 4}));
    EXPECT_TRUE(layer.hasPreviousState());
    EXPECT_EQ(values(layer.updateConvState(convInLinearAttentionLayer({5}))), (Values{2, 3, 4, 5}));
    EXPECT_EQ(values(layer.updateConvState(convInLinearAttentionLayer({6, 7}))), (Values{4, 5, 6, 7}));
    EXPECT_EQ(values(layer.updateConvState(convInLinearAttentionLayer({8, 9, 10, 11, 12}))), (Values{9, 10, 11, 12}));
    EXPECT_EQ(values(layer.updateConvState(convInLinearAttentionLayer({13, 14, 15, 16}))), (Values{13, 14, 15, 16}));
    EXPECT_EQ(values(layer.convStates()), (Values{13, 14, 15, 16}));
    EXPECT_EQ(layer.convBatchSize(), 1);
}

TEST(LinearAttentionLayerTest, ConvStateKeepsItsAddress) {
    LinearAttentionLayer layer;
    const void* address = layer.updateConvState(convInLinearAttentionLayer({1, 2, 3, 4})).data_ptr();
    EXPECT_EQ(layer.updateConvState(convInLinearAttentionLayer({5})).data_ptr(), address);
    EXPECT_EQ(layer.updateConvState(convInLinearAttentionLayer({6, 7, 8, 9, 10})).data_ptr(), address);
}

TEST(LinearAttentionLayerTest, ConvStateRollsEachChannelAndBatchRow) {
    LinearAttentionLayer layer;
    at::Tensor first = at::arange(12, at::kFloat).view({2, 2, 3}); // kernel 3
    layer.updateConvState(first);
    at::Tensor column = at::tensor({100.f, 200.f, 300.f, 400.f}).view({2, 2, 1});
    at::Tensor out = layer.updateConvState(column);
    EXPECT_EQ(values(out), (Values{1, 2, 100, 4, 5, 200, 7, 8, 300, 10, 11, 400}));
    EXPECT_EQ(layer.convBatchSize(), 2);
}

TEST(LinearAttentionLayerTest, RecurrentStateIsCopiedIn) {
    LinearAttentionLayer layer;
    layer.updateConvState(convInLinearAttentionLayer({1, 2, 3, 4}));
    at::Tensor recurrent = at::tensor({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}).view({1, 2, 3});
    at::Tensor stored = layer.updateRecurrentState(recurrent);
    EXPECT_EQ(values(stored), (Values{1, 2, 3, 4, 5, 6}));
    EXPECT_FALSE(stored.is_same(recurrent)); // a copy, not the caller's tensor
    recurrent.fill_(9);
    EXPECT_EQ(values(layer.recurrentStates()), (Values{1, 2, 3, 4, 5, 6}));
    const void* address = stored.data_ptr();
    at::Tensor second = layer.updateRecurrentState(at::full({1, 2, 3}, 7.f));
    EXPECT_EQ(values(second), (Values(6, 7.f)));
    EXPECT_EQ(second.data_ptr(), address);
    EXPECT_TRUE(layer.isRecurrentStatesInitialized());
}

TEST(LinearAttentionLayerTest, ResetZeroesBothStatesAndForgetsThePreviousState) {
    LinearAttentionLayer layer;
    layer.updateConvState(convInLinearAttentionLayer({1, 2, 3, 4}));
    layer.updateConvState(convInLinearAttentionLayer({5}));
    layer.updateRecurrentState(at::ones({1, 2}));
    layer.reset();
    EXPECT_FALSE(layer.hasPreviousState());
    EXPECT_EQ(values(layer.convStates()), (Values{0, 0, 0, 0}));
    EXPECT_EQ(values(layer.recurrentStates()), (Values{0, 0}));
    // Without a previous state the next update is copied in whole (broadcast), as in the reference.
    EXPECT_EQ(values(layer.updateConvState(convInLinearAttentionLayer({6}))), (Values{6, 6, 6, 6}));
    EXPECT_TRUE(layer.hasPreviousState());
}

TEST(LinearAttentionLayerTest, CropDoesNothing) {
    LinearAttentionLayer layer;
    layer.updateConvState(convInLinearAttentionLayer({1, 2, 3, 4}));
    layer.crop(1);
    layer.crop(-3);
    EXPECT_EQ(values(layer.convStates()), (Values{1, 2, 3, 4}));
    EXPECT_TRUE(layer.hasPreviousState());
}

TEST(LinearAttentionLayerTest, BatchResizingIsRefused) {
    LinearAttentionLayer layer;
    layer.updateConvState(convInLinearAttentionLayer({1, 2, 3, 4}));
    EXPECT_TRUE(refuses([&] { layer.batchRepeatInterleave(2); }, ErrorKind::Attribute,
                        {"'LinearAttentionLayer'", "batch_repeat_interleave"}));
    EXPECT_TRUE(refuses([&] { layer.batchSelectIndices(at::tensor({int64_t{0}})); }, ErrorKind::Attribute,
                        {"batch_select_indices"}));
    EXPECT_EQ(values(layer.convStates()), (Values{1, 2, 3, 4}));
}

TEST(LinearAttentionLayerTest, ReorderSelectsBatchRowsOfBothStates) {
    LinearAttentionLayer layer;
    layer.updateConvState(at::tensor({1.f, 2.f, 10.f, 20.f}).view({2, 1, 2}));
    layer.updateRecurrentState(at::tensor({5.f, 50.f}).view({2, 1}));
    layer.reorder(at::tensor({int64_t{1}, int64_t{1}}));
    EXPECT_EQ(values(layer.convStates()), (Values{10, 20, 10, 20}));
    EXPECT_EQ(values(layer.recurrentStates()), (Values{50, 50}));
    EXPECT_TRUE(refuses([&] { layer.reorder(at::tensor({int64_t{3}})); }, ErrorKind::Index, {"3"}));
    EXPECT_EQ(values(layer.convStates()), (Values{10, 20, 10, 20}));
}

TEST(LinearAttentionLayerTest, ConvStatesOfAnotherShapeAreRefusedAndChangeNothing) {
    LinearAttentionLayer layer;
    layer.updateConvState(convInLinearAttentionLayer({1, 2, 3, 4}));
    EXPECT_TRUE(refuses(
        [&] {
            layer.updateConvState(at::ones({1, 2, 1}));
        },
        ErrorKind::Runtime, {"conv_states"}));
    EXPECT_TRUE(refuses([&] { layer.updateConvState(at::ones({4})); }, ErrorKind::Value, {"conv_states"}));
    EXPECT_EQ(values(layer.convStates()), (Values{1, 2, 3, 4}));
    EXPECT_EQ(values(layer.updateConvState(convInLinearAttentionLayer({5}))), (Values{2, 3, 4, 5}));
}

TEST(LinearAttentionLayerTest, LazyInitializationTakesShapesFromTheStates) {
    LinearAttentionLayer layer;
    layer.lazyInitialization(at::ones({2, 3, 4}), at::ones({2, 5}));
    EXPECT_TRUE(layer.isConvStatesInitialized());
    EXPECT_TRUE(layer.isRecurrentStatesInitialized());
    EXPECT_EQ(layer.convStates().sizes(), (at::IntArrayRef{2, 3, 4}));
    EXPECT_EQ(layer.recurrentStates().sizes(), (at::IntArrayRef{2, 5}));
    EXPECT_EQ(layer.convStates().abs().sum().item<float>(), 0.f);
    EXPECT_FALSE(layer.hasPreviousState());
    EXPECT_EQ(layer.storedBytes(), (24 + 10) * static_cast<int64_t>(sizeof(float)));
}

TEST(LinearAttentionLayerTest, OffloadAndPrefetchOnTheHostKeepTheStates) {
    LinearAttentionLayer layer;
    layer.updateConvState(convInLinearAttentionLayer({1, 2, 3, 4}));
    layer.offload();
    layer.prefetch();
    EXPECT_EQ(layer.homeDevice(), at::Device(at::kCPU));
    EXPECT_EQ(layer.currentDevice(), at::Device(at::kCPU));
    EXPECT_EQ(values(layer.updateConvState(convInLinearAttentionLayer({5}))), (Values{2, 3, 4, 5}));
}

} // namespace
} // namespace kvscope::cache
