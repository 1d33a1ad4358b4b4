// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/DynamicLayer.h"

#include "CacheTestHelpers.h"

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

/// Two batch rows: b0 = [1, 2], b1 = [10, 20] (hf-cache.md 1.3.5).
at::Tensor twoRows() {
    return at::tensor({1.f, 2.f, 10.f, 20.f}).view({2, 1, 2, 1});
}

DynamicLayer layerHolding(const Values& tokens) {
    DynamicLayer layer;
    at::Tensor keys = states(tokens);
    layer.update(keys, -keys);
    return layer;
}

TEST(DynamicLayerTest, DescribesItself) {
    DynamicLayer layer;
    EXPECT_EQ(layer.typeName(), "DynamicLayer");
    EXPECT_FALSE(layer.isSliding());
    EXPECT_FALSE(layer.isCompileable());
    EXPECT_EQ(layer.maxCacheShape(), -1);
    EXPECT_EQ(layer.asAttention(), &layer);
    EXPECT_EQ(layer.asLinearAttention(), nullptr);
    EXPECT_FALSE(layer.maxBatchSize().has_value());
    EXPECT_FALSE(layer.maxCacheLen().has_value());
}

TEST(DynamicLayerTest, EmptyLayer) {
    DynamicLayer layer;
    EXPECT_FALSE(layer.isInitialized());
    EXPECT_EQ(layer.seqLength(), 0);
    EXPECT_EQ(layer.maskSizes(3), (MaskSizes{3, 0}));
    EXPECT_EQ(layer.storedTokens(), 0);
    EXPECT_EQ(layer.storedBytes(), 0);
    EXPECT_FALSE(layer.homeDevice().has_value());
}

TEST(DynamicLayerTest, WorkedSequence) { // hf-cache.md 1.3.1
    DynamicLayer layer;
    runSteps(layer, {
                        Step{{1, 2}, {2, 0}, {1, 2}, {1, 2}, 2},
                        Step{{3}, {3, 0}, {1, 2, 3}, {1, 2, 3}, 3},
                        Step{{4}, {4, 0}, {1, 2, 3, 4}, {1, 2, 3, 4}, 4},
                    });
    EXPECT_TRUE(layer.isInitialized());
    EXPECT_EQ(layer.storedTokens(), 4);
    EXPECT_EQ(layer.storedBytes(), 2 * 4 * static_cast<int64_t>(sizeof(float)));
    EXPECT_EQ(layer.homeDevice(), at::Device(at::kCPU));
}

TEST(DynamicLayerTest, ReturnedStatesKeepTheirValuesAfterLaterUpdates) {
    DynamicLayer layer;
    KeyValueStates first = layer.update(states({1, 2}), states({-1, -2}));
    Values expected{1, 2};
    for (int token = 3; token <= 60; ++token) {
        layer.update(states({static_cast<float>(token)}), states({static_cast<float>(-token)}));
        expected.push_back(static_cast<float>(token));
    }
    EXPECT_EQ(values(first.keys), (Values{1, 2}));
    EXPECT_EQ(values(first.values), (Values{-1, -2}));
    EXPECT_EQ(values(layer.keys()), expected);
    EXPECT_EQ(layer.seqLength(), 60);
}

TEST(DynamicLayerTest, CropTable) { // hf-cache.md 1.3.5, on [1, 2, 3, 4]
    struct Case {
        int64_t maxLength;
        Values kept;
    };
    for (const Case& c : {Case{2, {1, 2}}, Case{-1, {1, 2, 3}}, Case{0, {}}, Case{4, {1, 2, 3, 4}},
                          Case{10, {1, 2, 3, 4}}, Case{-4, {}}}) {
        SCOPED_TRACE("crop(" + std::to_string(c.maxLength) + ")");
        DynamicLayer layer = layerHolding({1, 2, 3, 4});
        layer.crop(c.maxLength);
        EXPECT_EQ(values(layer.keys()), c.kept);
        EXPECT_EQ(values(layer.values()), test::negated(c.kept));
        EXPECT_EQ(layer.seqLength(), static_cast<int64_t>(c.kept.size()));
        EXPECT_EQ(layer.maskSizes(1), (MaskSizes{static_cast<int64_t>(c.kept.size()) + 1, 0}));
    }
}

TEST(DynamicLayerTest, OversizedNegativeCropKeepsOneTokenLikeTheReference) {
    // Reference quirk (issue #47433): max_length = 3 - 5 = -2, then keys[..., :-2, :] keeps one token.
    DynamicLayer layer = layerHolding({1, 2, 3});
    layer.crop(-5);
    EXPECT_EQ(values(layer.keys()), (Values{1}));
    EXPECT_EQ(layer.seqLength(), 1);
}

TEST(DynamicLayerTest, UpdateAfterCropContinuesFromTheCut) {
    DynamicLayer layer = layerHolding({1, 2, 3, 4});
    layer.crop(2);
    runSteps(layer, {Step{{9}, {3, 0}, {1, 2, 9}, {1, 2, 9}, 3}});
}

TEST(DynamicLayerTest, CropOfAnEmptyLayer) {
    DynamicLayer layer;
    layer.crop(2); // nothing to remove: returns before touching the states, as the reference does
    EXPECT_FALSE(layer.isInitialized());
    // keys is None in the reference: `None[..., :-1, :]` is a TypeError.
    EXPECT_TRUE(refuses([&] { layer.crop(-1); }, ErrorKind::Type, {"DynamicLayer"}));
    // After lazy initialisation keys is the empty 1-D tensor: indexing it is an IndexError.
    layer.lazyInitialization(at::zeros({1, 1, 0, 1}), at::zeros({1, 1, 0, 1}));
    EXPECT_TRUE(refuses([&] { layer.crop(-1); }, ErrorKind::Index));
    layer.crop(0);
    runSteps(layer, {Step{{5}, {1, 0}, {5}, {5}, 1}});
}

TEST(DynamicLayerTest, BatchRepeatInterleave) {
    DynamicLayer layer;
    layer.update(twoRows(), -twoRows());
    layer.batchRepeatInterleave(2);
    EXPECT_EQ(layer.keys().sizes(), (at::IntArrayRef{4, 1, 2, 1}));
    EXPECT_EQ(values(layer.keys()), (Values{1, 2, 1, 2, 10, 20, 10, 20}));
    EXPECT_EQ(values(layer.values()), (Values{-1, -2, -1, -2, -10, -20, -10, -20}));
    EXPECT_EQ(layer.seqLength(), 2);
    // Later updates need the new batch size.
    at::Tensor next = at::tensor({3.f, 3.f, 30.f, 30.f}).view({4, 1, 1, 1});
    KeyValueStates out = layer.update(next, -next);
    EXPECT_EQ(values(out.keys), (Values{1, 2, 3, 1, 2, 3, 10, 20, 30, 10, 20, 30}));
}

TEST(DynamicLayerTest, BatchSelectIndices) {
    DynamicLayer layer;
    layer.update(twoRows(), -twoRows());
    layer.batchSelectIndices(at::tensor({int64_t{1}}));
    EXPECT_EQ(layer.keys().sizes(), (at::IntArrayRef{1, 1, 2, 1}));
    EXPECT_EQ(values(layer.keys()), (Values{10, 20}));
    EXPECT_EQ(values(layer.values()), (Values{-10, -20}));
}

TEST(DynamicLayerTest, BatchSelectIndicesAcceptsPythonNegativeIndices) {
    DynamicLayer layer;
    layer.update(twoRows(), -twoRows());
    layer.batchSelectIndices(at::tensor({int64_t{-1}, int64_t{0}}));
    EXPECT_EQ(values(layer.keys()), (Values{10, 20, 1, 2}));
}

TEST(DynamicLayerTest, BatchSelectIndicesOutOfRangeIsRefusedAndChangesNothing) {
    DynamicLayer layer;
    layer.update(twoRows(), -twoRows());
    EXPECT_TRUE(refuses([&] { layer.batchSelectIndices(at::tensor({int64_t{2}})); }, ErrorKind::Index,
                        {"index 2", "size 2"}));
    EXPECT_EQ(values(layer.keys()), (Values{1, 2, 10, 20}));
}

TEST(DynamicLayerTest, BatchSelectOfNoRowsLeavesNoTokens) {
    // The reference's get_seq_length is 0 once keys.numel() == 0: keys[[]] has shape [0, 1, 2, 1].
    DynamicLayer layer;
    layer.update(twoRows(), -twoRows());
    layer.batchSelectIndices(at::empty({0}, at::kLong));
    EXPECT_EQ(layer.keys().size(0), 0);
    EXPECT_EQ(layer.seqLength(), 0);
    EXPECT_EQ(layer.maskSizes(1), (MaskSizes{1, 0}));
}

TEST(DynamicLayerTest, Reorder) {
    DynamicLayer layer;
    layer.update(twoRows(), -twoRows());
    layer.reorder(at::tensor({int64_t{1}, int64_t{1}}));
    EXPECT_EQ(values(layer.keys()), (Values{10, 20, 10, 20}));
    EXPECT_EQ(values(layer.values()), (Values{-10, -20, -10, -20}));
    layer.reorder(at::tensor({int64_t{0}, int64_t{0}}));
    EXPECT_EQ(values(layer.keys()), (Values{10, 20, 10, 20}));
}

TEST(DynamicLayerTest, ReorderRefusesBadBeamIndicesAndChangesNothing) {
    DynamicLayer layer;
    layer.update(twoRows(), -twoRows());
    EXPECT_TRUE(refuses(
        [&] {
            layer.reorder(at::tensor({int64_t{0}, int64_t{2}}));
        },
        ErrorKind::Index, {"2"}));
    EXPECT_TRUE(refuses([&] { layer.reorder(at::tensor({int64_t{-1}})); }, ErrorKind::Index, {"-1"}));
    EXPECT_TRUE(refuses([&] { layer.reorder(at::tensor({0.5f})); }, ErrorKind::Type, {"beam_idx"}));
    EXPECT_EQ(values(layer.keys()), (Values{1, 2, 10, 20}));
}

TEST(DynamicLayerTest, BatchOperationsOnAnEmptyLayerDoNothing) {
    DynamicLayer layer;
    layer.reorder(at::tensor({int64_t{5}}));
    layer.batchRepeatInterleave(3);
    layer.batchSelectIndices(at::tensor({int64_t{7}}));
    EXPECT_FALSE(layer.isInitialized());
    EXPECT_EQ(layer.seqLength(), 0);
}

TEST(DynamicLayerTest, ResetZeroesTheStatesButKeepsTheirLength) {
    // The reference zeroes `keys` in place; a DynamicLayer has no counter to reset.
    DynamicLayer layer = layerHolding({1, 2, 3});
    layer.reset();
    EXPECT_EQ(values(layer.keys()), (Values{0, 0, 0}));
    EXPECT_EQ(values(layer.values()), (Values{0, 0, 0}));
    EXPECT_EQ(layer.seqLength(), 3);
    KeyValueStates out = layer.update(states({4}), states({-4}));
    EXPECT_EQ(values(out.keys), (Values{0, 0, 0, 4}));
}

TEST(DynamicLayerTest, MismatchedStatesAreRefusedAndChangeNothing) {
    DynamicLayer layer = layerHolding({1, 2});
    EXPECT_TRUE(refuses(
        [&] {
            layer.update(at::zeros({1, 1, 1, 2}), at::zeros({1, 1, 1, 2}));
        },
        ErrorKind::Runtime, {"Sizes of tensors must match", "[1, 1, 1, 2]"}));
    EXPECT_TRUE(refuses(
        [&] {
            layer.update(at::zeros({1, 1, 2}), at::zeros({1, 1, 2}));
        },
        ErrorKind::Value, {"key_states", "4-D", "[1, 1, 2]"}));
    EXPECT_TRUE(refuses([&] { layer.update(states({3}), states({3, 4})); }, ErrorKind::Value, {"1 and 2"}));
    EXPECT_EQ(layer.seqLength(), 2);
    EXPECT_EQ(values(layer.keys()), (Values{1, 2}));
    runSteps(layer, {Step{{3}, {3, 0}, {1, 2, 3}, {1, 2, 3}, 3}});
}

TEST(DynamicLayerTest, LazyInitializationThenNormalUpdates) {
    DynamicLayer layer;
    layer.lazyInitialization(at::zeros({1, 1, 0, 1}), at::zeros({1, 1, 0, 1}));
    EXPECT_TRUE(layer.isInitialized());
    EXPECT_EQ(layer.seqLength(), 0);
    EXPECT_EQ(layer.maskSizes(2), (MaskSizes{2, 0}));
    runSteps(layer, {Step{{1, 2}, {2, 0}, {1, 2}, {1, 2}, 2}, Step{{3}, {3, 0}, {1, 2, 3}, {1, 2, 3}, 3}});
}

TEST(DynamicLayerTest, OffloadAndPrefetchOnTheHostKeepTheStates) {
    DynamicLayer layer = layerHolding({1, 2, 3});
    layer.offload();
    EXPECT_EQ(layer.currentDevice(), at::Device(at::kCPU));
    layer.prefetch();
    EXPECT_EQ(values(layer.keys()), (Values{1, 2, 3}));
    runSteps(layer, {Step{{4}, {4, 0}, {1, 2, 3, 4}, {1, 2, 3, 4}, 4}});
}

TEST(DynamicLayerTest, KeepsDtypeOfTheStates) {
    DynamicLayer layer;
    at::Tensor keys = rangeStates(1, 3).to(at::kDouble);
    KeyValueStates out = layer.update(keys, keys);
    EXPECT_EQ(out.keys.scalar_type(), at::kDouble);
    EXPECT_EQ(layer.storedBytes(), 2 * 3 * static_cast<int64_t>(sizeof(double)));
}

} // namespace
} // namespace kvscope::cache
