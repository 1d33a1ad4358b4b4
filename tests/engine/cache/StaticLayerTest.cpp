// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/StaticLayer.h"

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

TEST(StaticLayerTest, DescribesItself) {
    StaticLayer layer(4);
    EXPECT_EQ(layer.typeName(), "StaticLayer");
    EXPECT_FALSE(layer.isSliding());
    EXPECT_TRUE(layer.isCompileable());
    EXPECT_EQ(layer.maxCacheShape(), 4);
    EXPECT_EQ(layer.maxCacheLen(), 4);
    EXPECT_FALSE(layer.isInitialized());
    EXPECT_FALSE(layer.maxBatchSize().has_value());
    EXPECT_EQ(layer.seqLength(), 0);
    EXPECT_EQ(layer.maskSizes(2), (MaskSizes{4, 0}));
    EXPECT_EQ(layer.storedBytes(), 0);
}

TEST(StaticLayerTest, WorkedSequenceAndOverflow) { // hf-cache.md 1.3.3
    StaticLayer layer(4);
    runSteps(layer, {
                        Step{{1, 2}, {4, 0}, {1, 2, 0, 0}, {1, 2, 0, 0}, 2},
                        Step{{3}, {4, 0}, {1, 2, 3, 0}, {1, 2, 3, 0}, 3},
                        Step{{4}, {4, 0}, {1, 2, 3, 4}, {1, 2, 3, 4}, 4},
                    });
    EXPECT_EQ(layer.maskSizes(1), (MaskSizes{4, 0}));
    EXPECT_TRUE(refuses([&] { layer.update(states({5}), states({-5})); }, ErrorKind::Index,
                        {"index_copy_", "index 4", "size 4"}));
    // Refused before anything changed.
    EXPECT_EQ(layer.seqLength(), 4);
    EXPECT_EQ(values(layer.keys()), (Values{1, 2, 3, 4}));
    EXPECT_EQ(values(layer.values()), (Values{-1, -2, -3, -4}));
    layer.reset();
    runSteps(layer, {Step{{5}, {4, 0}, {5, 0, 0, 0}, {5, 0, 0, 0}, 1}});
}

TEST(StaticLayerTest, ReturnsTheWholeBufferWhichAliasesTheStoredStates) {
    StaticLayer layer(3);
    KeyValueStates out = layer.update(states({1}), states({-1}));
    EXPECT_TRUE(out.keys.is_same(layer.keys()));
    EXPECT_TRUE(out.values.is_same(layer.values()));
    const void* address = layer.keys().data_ptr();
    layer.update(states({2}), states({-2}));
    EXPECT_EQ(layer.keys().data_ptr(), address); // written in place: the static address is kept
}

TEST(StaticLayerTest, MultiTokenOverflowIsRefusedAndAShorterUpdateStillFits) {
    StaticLayer layer(4);
    layer.update(rangeStates(1, 2), -rangeStates(1, 2));
    EXPECT_TRUE(refuses([&] { layer.update(rangeStates(3, 5), -rangeStates(3, 5)); }, ErrorKind::Index,
                        {"index 4", "size 4", "3 more"}));
    EXPECT_EQ(layer.seqLength(), 2);
    EXPECT_EQ(values(layer.keys()), (Values{1, 2, 0, 0}));
    runSteps(layer, {Step{{3, 4}, {4, 0}, {1, 2, 3, 4}, {1, 2, 3, 4}, 4}});
}

TEST(StaticLayerTest, FullPrefillFollowedByATokenIsRefused) {
    // The seed trap of hf-cache.md 1.2: a padded prefill [1, 2, 0, 0] fills all four slots.
    StaticLayer layer(4);
    layer.update(states({1, 2, 0, 0}), states({1, 2, 0, 0}));
    EXPECT_TRUE(refuses([&] { layer.update(states({3}), states({3})); }, ErrorKind::Index, {"index 4"}));
    EXPECT_EQ(layer.seqLength(), 4);
}

TEST(StaticLayerTest, ReorderSwapsRowsOfTheWholeBuffer) { // hf-cache.md 1.3.5
    StaticLayer layer(3);
    at::Tensor rows = at::tensor({1.f, 2.f, 10.f, 20.f}).view({2, 1, 2, 1});
    layer.update(rows, -rows);
    layer.reorder(at::tensor({int64_t{1}, int64_t{0}}));
    EXPECT_EQ(values(layer.keys()), (Values{10, 20, 0, 1, 2, 0}));
    EXPECT_EQ(values(layer.values()), (Values{-10, -20, 0, -1, -2, 0}));
    EXPECT_EQ(layer.seqLength(), 2);
    at::Tensor next = at::tensor({30.f, 3.f}).view({2, 1, 1, 1});
    KeyValueStates out = layer.update(next, -next);
    EXPECT_EQ(values(out.keys), (Values{10, 20, 30, 1, 2, 3}));
}

TEST(StaticLayerTest, CropAndBatchResizingAreRefused) {
    StaticLayer layer(3);
    layer.update(rangeStates(1, 2), -rangeStates(1, 2));
    EXPECT_TRUE(refuses([&] { layer.crop(1); }, ErrorKind::Attribute, {"'StaticLayer'", "'crop'"}));
    EXPECT_TRUE(
        refuses([&] { layer.batchRepeatInterleave(2); }, ErrorKind::Attribute, {"batch_repeat_interleave"}));
    EXPECT_TRUE(refuses([&] { layer.batchSelectIndices(at::tensor({int64_t{0}})); }, ErrorKind::Attribute,
                        {"batch_select_indices"}));
    EXPECT_EQ(values(layer.keys()), (Values{1, 2, 0}));
    EXPECT_EQ(layer.seqLength(), 2);
}

TEST(StaticLayerTest, ResetZeroesTheBufferAndTheCount) {
    StaticLayer layer(3);
    layer.update(rangeStates(1, 3), -rangeStates(1, 3));
    const void* address = layer.keys().data_ptr();
    layer.reset();
    EXPECT_TRUE(layer.isInitialized());
    EXPECT_EQ(layer.seqLength(), 0);
    EXPECT_EQ(values(layer.keys()), (Values{0, 0, 0}));
    EXPECT_EQ(layer.keys().data_ptr(), address);
    runSteps(layer, {Step{{7, 8}, {3, 0}, {7, 8, 0}, {7, 8, 0}, 2}});
}

TEST(StaticLayerTest, LazyInitializationAllocatesZeroedBuffers) {
    StaticLayer layer(4);
    layer.lazyInitialization(at::zeros({2, 3, 0, 5}), at::zeros({2, 3, 0, 7}));
    EXPECT_TRUE(layer.isInitialized());
    EXPECT_EQ(layer.seqLength(), 0);
    EXPECT_EQ(layer.keys().sizes(), (at::IntArrayRef{2, 3, 4, 5}));
    EXPECT_EQ(layer.values().sizes(), (at::IntArrayRef{2, 3, 4, 7}));
    EXPECT_EQ(layer.keys().abs().sum().item<float>(), 0.f);
    EXPECT_EQ(layer.maxBatchSize(), 2);
    EXPECT_EQ(layer.storedBytes(), (2 * 3 * 4 * 5 + 2 * 3 * 4 * 7) * static_cast<int64_t>(sizeof(float)));
    EXPECT_EQ(layer.storedTokens(), 0);
}

TEST(StaticLayerTest, StatesOfAnotherShapeAreRefused) {
    StaticLayer layer(4);
    layer.update(at::ones({1, 2, 1, 3}), at::ones({1, 2, 1, 3}));
    EXPECT_TRUE(refuses(
        [&] {
            layer.update(at::ones({1, 1, 1, 3}), at::ones({1, 1, 1, 3}));
        },
        ErrorKind::Runtime, {"[1, 2, 4, 3]", "[1, 1, 1, 3]"}));
    EXPECT_TRUE(refuses(
        [&] {
            layer.update(at::ones({1, 2, 1, 3}), at::ones({1, 2, 2, 3}));
        },
        ErrorKind::Value, {"1 and 2"}));
    EXPECT_EQ(layer.seqLength(), 1);
    layer.update(at::full({1, 2, 1, 3}, 2.f), at::full({1, 2, 1, 3}, 2.f));
    EXPECT_EQ(layer.seqLength(), 2);
    EXPECT_EQ(layer.keys()[0][1][1][2].item<float>(), 2.f);
}

TEST(StaticLayerTest, MaxCacheLenBelowOneIsRefused) {
    EXPECT_TRUE(refuses([] { StaticLayer layer(0); }, ErrorKind::Value, {"max_cache_len", "0"}));
}

TEST(StaticLayerTest, OffloadAndPrefetchOnTheHostKeepTheStates) {
    StaticLayer layer(3);
    layer.update(rangeStates(1, 2), -rangeStates(1, 2));
    layer.offload();
    layer.prefetch();
    EXPECT_EQ(layer.homeDevice(), at::Device(at::kCPU));
    EXPECT_EQ(layer.currentDevice(), at::Device(at::kCPU));
    runSteps(layer, {Step{{3}, {3, 0}, {1, 2, 3}, {1, 2, 3}, 3}});
}

} // namespace
} // namespace kvscope::cache
