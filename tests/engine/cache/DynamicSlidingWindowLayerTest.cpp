// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/DynamicSlidingWindowLayer.h"

#include "CacheTestHelpers.h"

#include <ATen/ATen.h>
#include <algorithm>
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

TEST(DynamicSlidingWindowLayerTest, DescribesItself) {
    DynamicSlidingWindowLayer layer(4);
    EXPECT_EQ(layer.typeName(), "DynamicSlidingWindowLayer");
    EXPECT_TRUE(layer.isSliding());
    EXPECT_FALSE(layer.isCompileable());
    EXPECT_EQ(layer.slidingWindow(), 4);
    EXPECT_EQ(layer.maxCacheShape(), 4);
    EXPECT_EQ(layer.seqLength(), 0);
    EXPECT_EQ(layer.maskSizes(2), (MaskSizes{2, 0}));
}

TEST(DynamicSlidingWindowLayerTest, WindowFourShortPrefill) { // hf-cache.md 1.3.2
    DynamicSlidingWindowLayer layer(4);
    runSteps(layer, {
                        Step{{1, 2}, {2, 0}, {1, 2}, {1, 2}, 2},
                        Step{{3}, {3, 0}, {1, 2, 3}, {1, 2, 3}, 3},
                        Step{{4}, {4, 0}, {1, 2, 3, 4}, {2, 3, 4}, 4},
                        Step{{5}, {4, 1}, {2, 3, 4, 5}, {3, 4, 5}, 5},
                        Step{{6}, {4, 2}, {3, 4, 5, 6}, {4, 5, 6}, 6},
                        Step{{7, 8}, {5, 3}, {4, 5, 6, 7, 8}, {6, 7, 8}, 8},
                    });
    EXPECT_EQ(layer.storedTokens(), 3);
}

TEST(DynamicSlidingWindowLayerTest, WindowFourLongPrefill) {
    DynamicSlidingWindowLayer layer(4);
    runSteps(layer, {
                        Step{{1, 2, 3, 4, 5, 6}, {6, 0}, {1, 2, 3, 4, 5, 6}, {4, 5, 6}, 6},
                        Step{{7}, {4, 3}, {4, 5, 6, 7}, {5, 6, 7}, 7},
                        Step{{8, 9}, {5, 4}, {5, 6, 7, 8, 9}, {7, 8, 9}, 9},
                    });
}

TEST(DynamicSlidingWindowLayerTest, WindowTwo) { // the inputs of HF's hybrid test
    DynamicSlidingWindowLayer layer(2);
    runSteps(layer, {
                        Step{{10, 20, 30}, {3, 0}, {10, 20, 30}, {30}, 3},
                        Step{{50}, {2, 2}, {30, 50}, {50}, 4},
                        Step{{60, 70}, {3, 3}, {50, 60, 70}, {70}, 6},
                    });
}

/// The reference's DynamicSlidingWindowLayer on plain vectors, for long runs.
struct NaiveDynamicWindow {
    int64_t window;
    Values stored;
    int64_t seen = 0;

    MaskSizes maskSizes(int64_t query) const {
        const int64_t offset = std::max<int64_t>(seen - window + 1, 0);
        return {seen >= window ? window - 1 + query : seen + query, offset};
    }
    Values update(const Values& tokens) {
        Values full = stored;
        full.insert(full.end(), tokens.begin(), tokens.end());
        seen += static_cast<int64_t>(tokens.size());
        const auto keep = std::min<size_t>(full.size(), static_cast<size_t>(window - 1));
        stored.assign(full.end() - static_cast<std::ptrdiff_t>(keep), full.end());
        return full;
    }
};

TEST(DynamicSlidingWindowLayerTest, FiftyDecodeStepsPastManyWraps) {
    DynamicSlidingWindowLayer layer(3);
    NaiveDynamicWindow naive{3, {}};
    for (int token = 1; token <= 50; ++token) {
        SCOPED_TRACE("token " + std::to_string(token));
        const Values input{static_cast<float>(token)};
        const MaskSizes expectedMask = naive.maskSizes(1);
        const Values expectedReturn = naive.update(input);
        EXPECT_EQ(layer.maskSizes(1), expectedMask);
        KeyValueStates out = layer.update(states(input), -states(input));
        ASSERT_EQ(values(out.keys), expectedReturn);
        ASSERT_EQ(values(out.values), test::negated(expectedReturn));
        ASSERT_EQ(values(layer.keys()), naive.stored);
        ASSERT_EQ(layer.seqLength(), token);
    }
    EXPECT_EQ(values(layer.keys()), (Values{49, 50}));
    EXPECT_EQ(layer.maskSizes(1), (MaskSizes{3, 48}));
}

TEST(DynamicSlidingWindowLayerTest, MixedUpdateSizesMatchTheNaiveWindow) {
    for (int64_t window : {2, 3, 5, 8}) {
        SCOPED_TRACE("window " + std::to_string(window));
        DynamicSlidingWindowLayer layer(window);
        NaiveDynamicWindow naive{window, {}};
        const int sizes[] = {3, 1, 1, 2, 1, 7, 1, 1, 1, 4, 1, 2, 9, 1, 1};
        int next = 1;
        for (int round = 0; round < 4; ++round) {
            for (int size : sizes) {
                Values input;
                for (int i = 0; i < size; ++i) {
                    input.push_back(static_cast<float>(next++));
                }
                EXPECT_EQ(layer.maskSizes(size), naive.maskSizes(size));
                const Values expected = naive.update(input);
                KeyValueStates out = layer.update(states(input), -states(input));
                ASSERT_EQ(values(out.keys), expected) << "after token " << next - 1;
                ASSERT_EQ(values(layer.keys()), naive.stored);
                ASSERT_EQ(layer.seqLength(), naive.seen);
            }
        }
    }
}

TEST(DynamicSlidingWindowLayerTest, WindowOfOneKeepsEverythingLikeTheReference) {
    // `[-(W - 1):]` with W = 1 is `[0:]` in Python: nothing is dropped.
    DynamicSlidingWindowLayer layer(1);
    layer.update(rangeStates(1, 2), rangeStates(1, 2));
    EXPECT_EQ(values(layer.keys()), (Values{1, 2}));
    EXPECT_EQ(layer.maskSizes(1), (MaskSizes{1, 2}));
    KeyValueStates out = layer.update(states({3}), states({3}));
    EXPECT_EQ(values(out.keys), (Values{1, 2, 3}));
    EXPECT_EQ(values(layer.keys()), (Values{1, 2, 3}));
    EXPECT_EQ(layer.seqLength(), 3);
}

TEST(DynamicSlidingWindowLayerTest, WindowBelowOneIsRefused) {
    EXPECT_TRUE(
        refuses([] { DynamicSlidingWindowLayer layer(0); }, ErrorKind::Value, {"sliding_window", "0"}));
    EXPECT_TRUE(refuses([] { DynamicSlidingWindowLayer layer(-3); }, ErrorKind::Value, {"-3"}));
}

TEST(DynamicSlidingWindowLayerTest, CropBeforeTheWindowFills) { // hf-cache.md 1.3.2
    DynamicSlidingWindowLayer layer(4);
    layer.update(rangeStates(1, 3), -rangeStates(1, 3));
    layer.crop(-1);
    EXPECT_EQ(values(layer.keys()), (Values{1, 2}));
    EXPECT_EQ(layer.seqLength(), 2);
    EXPECT_EQ(layer.maskSizes(1), (MaskSizes{3, 0}));
    runSteps(layer, {Step{{7}, {3, 0}, {1, 2, 7}, {1, 2, 7}, 3}});
}

TEST(DynamicSlidingWindowLayerTest, CropToMoreThanHeldSetsTheCounterToTheStoredLength) {
    DynamicSlidingWindowLayer layer(4);
    layer.update(rangeStates(1, 3), -rangeStates(1, 3));
    layer.crop(10);
    EXPECT_EQ(values(layer.keys()), (Values{1, 2, 3}));
    EXPECT_EQ(layer.seqLength(), 3);
}

TEST(DynamicSlidingWindowLayerTest, CropAfterTheWindowFilledIsRefusedAndChangesNothing) {
    DynamicSlidingWindowLayer layer(4);
    layer.update(rangeStates(1, 4), -rangeStates(1, 4));
    EXPECT_TRUE(refuses([&] { layer.crop(2); }, ErrorKind::Value,
                        {"Cannot `crop` a `DynamicSlidingWindowLayer`", "seen 4", "window 4"}));
    EXPECT_EQ(values(layer.keys()), (Values{2, 3, 4}));
    EXPECT_EQ(layer.seqLength(), 4);
    runSteps(layer, {Step{{5}, {4, 1}, {2, 3, 4, 5}, {3, 4, 5}, 5}});
}

TEST(DynamicSlidingWindowLayerTest, CropOfAnInitializedButEmptyLayerIsAnIndexError) {
    // keys is the empty 1-D tensor: the reference's `keys.shape[-2]` is an IndexError.
    DynamicSlidingWindowLayer layer(4);
    layer.lazyInitialization(at::zeros({1, 1, 0, 1}), at::zeros({1, 1, 0, 1}));
    EXPECT_TRUE(refuses([&] { layer.crop(2); }, ErrorKind::Index));
    EXPECT_TRUE(refuses([&] { layer.crop(-1); }, ErrorKind::Index));
    runSteps(layer, {Step{{1}, {1, 0}, {1}, {1}, 1}});
}

TEST(DynamicSlidingWindowLayerTest, NegativeCropOfANeverUpdatedLayerIsATypeError) {
    // `None[..., :-1, :]`: TypeError in the reference (DynamicLayer.crop fails before `.shape` is read).
    DynamicSlidingWindowLayer layer(4);
    EXPECT_TRUE(refuses([&] { layer.crop(-1); }, ErrorKind::Type));
}

TEST(DynamicSlidingWindowLayerTest, CropOfANeverUpdatedLayerIsAnAttributeError) {
    // Reference: DynamicLayer.crop(2) returns early, then `self.keys.shape[-2]` on None raises
    // AttributeError: 'NoneType' object has no attribute 'shape'.
    DynamicSlidingWindowLayer layer(4);
    EXPECT_TRUE(refuses([&] { layer.crop(2); }, ErrorKind::Attribute));
}

TEST(DynamicSlidingWindowLayerTest, ResetZeroesTheWindowAndRestartsTheCount) {
    DynamicSlidingWindowLayer layer(4);
    layer.update(rangeStates(1, 5), -rangeStates(1, 5));
    layer.reset();
    EXPECT_EQ(values(layer.keys()), (Values{0, 0, 0}));
    EXPECT_EQ(layer.seqLength(), 0);
    EXPECT_EQ(layer.maskSizes(1), (MaskSizes{1, 0}));
    // As in the reference, the zeroed window is still returned in front of the new token.
    KeyValueStates out = layer.update(states({7}), states({-7}));
    EXPECT_EQ(values(out.keys), (Values{0, 0, 0, 7}));
    EXPECT_EQ(values(layer.keys()), (Values{0, 0, 7}));
    EXPECT_EQ(layer.seqLength(), 1);
}

TEST(DynamicSlidingWindowLayerTest, BatchOperationsApplyToTheWindow) {
    DynamicSlidingWindowLayer layer(3);
    at::Tensor rows = at::tensor({1.f, 2.f, 3.f, 10.f, 20.f, 30.f}).view({2, 1, 3, 1});
    layer.update(rows, -rows);
    EXPECT_EQ(values(layer.keys()), (Values{2, 3, 20, 30}));
    layer.reorder(at::tensor({int64_t{1}, int64_t{0}}));
    EXPECT_EQ(values(layer.keys()), (Values{20, 30, 2, 3}));
    layer.batchSelectIndices(at::tensor({int64_t{0}}));
    EXPECT_EQ(values(layer.keys()), (Values{20, 30}));
    layer.batchRepeatInterleave(2);
    EXPECT_EQ(values(layer.keys()), (Values{20, 30, 20, 30}));
    EXPECT_EQ(layer.seqLength(), 3);
}

} // namespace
} // namespace kvscope::cache
