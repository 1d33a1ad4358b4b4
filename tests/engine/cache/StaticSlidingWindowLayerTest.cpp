// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/StaticSlidingWindowLayer.h"

#include "CacheTestHelpers.h"

#include <ATen/ATen.h>
#include <algorithm>
#include <gtest/gtest.h>
#include <random>

namespace kvscope::cache {
namespace {

using test::rangeStates;
using test::refuses;
using test::runSteps;
using test::states;
using test::Step;
using test::values;
using test::Values;

/// The reference's StaticSlidingWindowLayer.update and get_mask_sizes on plain vectors (three branches,
/// with c the tokens seen before the call and W = min(sliding_window, max_cache_len)).
struct NaiveStaticWindow {
    int64_t window;
    Values buffer = Values(static_cast<size_t>(window), 0.f);
    int64_t seen = 0;

    MaskSizes maskSizes(int64_t query) const {
        const int64_t offset = std::max<int64_t>(seen - window + 1, 0);
        if (seen >= window) {
            return {window + query - 1, offset};
        }
        if (seen + query > window) {
            return {seen + query, offset};
        }
        return {window, offset};
    }
    Values update(const Values& tokens) {
        const auto query = static_cast<int64_t>(tokens.size());
        const int64_t before = seen;
        seen += query;
        Values full;
        if (before >= window) {
            if (query == 1) {
                std::rotate(buffer.begin(), buffer.begin() + 1, buffer.end());
                buffer.back() = tokens[0];
                return buffer;
            }
            full.assign(buffer.begin() + 1, buffer.end());
        } else if (before + query > window) {
            full.assign(buffer.begin(), buffer.begin() + before);
        } else {
            std::copy(tokens.begin(), tokens.end(), buffer.begin() + before);
            return buffer;
        }
        full.insert(full.end(), tokens.begin(), tokens.end());
        buffer.assign(full.end() - window, full.end());
        return full;
    }
};

/// Runs `sizes` update sizes through the layer and the naive model with consecutive token values.
void compareWithNaive(StaticSlidingWindowLayer& layer, NaiveStaticWindow& naive,
                      const std::vector<int>& sizes, int& next) {
    for (int size : sizes) {
        Values input;
        for (int i = 0; i < size; ++i) {
            input.push_back(static_cast<float>(next++));
        }
        SCOPED_TRACE("update ending at token " + std::to_string(next - 1));
        ASSERT_EQ(layer.maskSizes(size), naive.maskSizes(size));
        const Values expected = naive.update(input);
        KeyValueStates out = layer.update(states(input), -states(input));
        ASSERT_EQ(values(out.keys), expected);
        ASSERT_EQ(values(out.values), test::negated(expected));
        ASSERT_EQ(values(layer.keys()), naive.buffer);
        ASSERT_EQ(values(layer.values()), test::negated(naive.buffer));
        ASSERT_EQ(layer.seqLength(), naive.seen);
    }
}

TEST(StaticSlidingWindowLayerTest, DescribesItself) {
    StaticSlidingWindowLayer layer(8, 4);
    EXPECT_EQ(layer.typeName(), "StaticSlidingWindowLayer");
    EXPECT_TRUE(layer.isSliding());
    EXPECT_TRUE(layer.isCompileable());
    EXPECT_EQ(layer.slidingWindow(), 4);
    EXPECT_EQ(layer.maxCacheShape(), 4);
    EXPECT_EQ(layer.maxCacheLen(), 4);
    StaticSlidingWindowLayer clipped(3, 8);
    EXPECT_EQ(clipped.slidingWindow(), 8);
    EXPECT_EQ(clipped.maxCacheShape(), 3);
}

TEST(StaticSlidingWindowLayerTest, MaxEightWindowFourShortPrefill) { // hf-cache.md 1.3.4
    StaticSlidingWindowLayer layer(8, 4);
    runSteps(layer, {
                        Step{{1, 2}, {4, 0}, {1, 2, 0, 0}, {1, 2, 0, 0}, 2},
                        Step{{3}, {4, 0}, {1, 2, 3, 0}, {1, 2, 3, 0}, 3},
                        Step{{4}, {4, 0}, {1, 2, 3, 4}, {1, 2, 3, 4}, 4},
                        Step{{5}, {4, 1}, {2, 3, 4, 5}, {2, 3, 4, 5}, 5},
                        Step{{6}, {4, 2}, {3, 4, 5, 6}, {3, 4, 5, 6}, 6},
                        Step{{7, 8}, {5, 3}, {4, 5, 6, 7, 8}, {5, 6, 7, 8}, 8},
                    });
    EXPECT_EQ(layer.storedTokens(), 4);
}

TEST(StaticSlidingWindowLayerTest, MaxEightWindowFourLongPrefill) {
    StaticSlidingWindowLayer layer(8, 4);
    runSteps(layer, {
                        Step{{1, 2, 3, 4, 5, 6}, {6, 0}, {1, 2, 3, 4, 5, 6}, {3, 4, 5, 6}, 6},
                        Step{{7}, {4, 3}, {4, 5, 6, 7}, {4, 5, 6, 7}, 7},
                    });
}

TEST(StaticSlidingWindowLayerTest, MaxThreeWindowThreeCrossingUpdate) {
    StaticSlidingWindowLayer layer(3, 3);
    runSteps(layer, {
                        Step{{10, 20}, {3, 0}, {10, 20, 0}, {10, 20, 0}, 2},
                        Step{{30, 40}, {4, 0}, {10, 20, 30, 40}, {20, 30, 40}, 4},
                    });
}

TEST(StaticSlidingWindowLayerTest, MaxThreeWindowEightIsClippedToThree) {
    StaticSlidingWindowLayer layer(3, 8);
    runSteps(layer, {
                        Step{{1}, {3, 0}, {1, 0, 0}, {1, 0, 0}, 1},
                        Step{{2}, {3, 0}, {1, 2, 0}, {1, 2, 0}, 2},
                        Step{{3}, {3, 0}, {1, 2, 3}, {1, 2, 3}, 3},
                        // Token 1 is dropped although a true window of 8 would still hold it.
                        Step{{4}, {3, 1}, {2, 3, 4}, {2, 3, 4}, 4},
                    });
}

TEST(StaticSlidingWindowLayerTest, HybridTestOfHuggingFace) { // hf-cache.md 1.2, sliding side, W = 2, max 4
    StaticSlidingWindowLayer layer(4, 2);
    runSteps(layer, {
                        Step{{10, 20, 30}, {3, 0}, {10, 20, 30}, {20, 30}, 3},
                        Step{{50}, {2, 2}, {30, 50}, {30, 50}, 4},
                        Step{{60, 70}, {3, 3}, {50, 60, 70}, {60, 70}, 6},
                    });
}

TEST(StaticSlidingWindowLayerTest, FiftyDecodeStepsPastManyWraps) {
    StaticSlidingWindowLayer layer(10, 3);
    NaiveStaticWindow naive{3};
    int next = 1;
    compareWithNaive(layer, naive, {2}, next);
    for (int step = 0; step < 50; ++step) {
        compareWithNaive(layer, naive, {1}, next);
        // Once full, a decode step returns the last W tokens.
        ASSERT_EQ(values(layer.keys()), (Values{static_cast<float>(next - 3), static_cast<float>(next - 2),
                                                static_cast<float>(next - 1)}));
    }
    EXPECT_EQ(layer.seqLength(), 52);
    EXPECT_EQ(layer.maskSizes(1), (MaskSizes{3, 50}));
}

TEST(StaticSlidingWindowLayerTest, MixedUpdateSizesMatchTheNaiveWindow) {
    for (auto [maxCacheLen, window] :
         {std::pair<int64_t, int64_t>{8, 4}, {10, 3}, {3, 8}, {5, 5}, {6, 1}, {9, 2}}) {
        SCOPED_TRACE("max " + std::to_string(maxCacheLen) + " window " + std::to_string(window));
        StaticSlidingWindowLayer layer(maxCacheLen, window);
        NaiveStaticWindow naive{std::min(maxCacheLen, window)};
        std::mt19937 random(static_cast<unsigned>(maxCacheLen * 31 + window));
        std::vector<int> sizes;
        for (int i = 0; i < 120; ++i) {
            const int roll = static_cast<int>(random() % 10);
            sizes.push_back(roll < 6 ? 1 : roll - 4); // mostly decode steps, some of 2..5 tokens
        }
        int next = 1;
        compareWithNaive(layer, naive, sizes, next);
    }
}

TEST(StaticSlidingWindowLayerTest, ReorderAfterWrapsKeepsSliding) {
    StaticSlidingWindowLayer layer(8, 3);
    // Row 0 counts up from 1, row 1 from 101.
    auto rows = [](float first) { return at::tensor({first, first + 100}).view({2, 1, 1, 1}); };
    for (int token = 1; token <= 7; ++token) {
        layer.update(rows(static_cast<float>(token)), -rows(static_cast<float>(token)));
    }
    EXPECT_EQ(values(layer.keys()), (Values{5, 6, 7, 105, 106, 107}));
    layer.reorder(at::tensor({int64_t{1}, int64_t{0}}));
    EXPECT_EQ(values(layer.keys()), (Values{105, 106, 107, 5, 6, 7}));
    EXPECT_EQ(values(layer.values()), (Values{-105, -106, -107, -5, -6, -7}));
    for (int token = 8; token <= 12; ++token) {
        KeyValueStates out = layer.update(rows(static_cast<float>(token)), -rows(static_cast<float>(token)));
        const auto t = static_cast<float>(token);
        // Row 0 now holds the old row 1 history, then the new tokens of row 0.
        ASSERT_EQ(values(out.keys)[2], t);
        ASSERT_EQ(values(out.keys)[5], t + 100);
    }
    EXPECT_EQ(values(layer.keys()), (Values{10, 11, 12, 110, 111, 112}));
    EXPECT_EQ(layer.seqLength(), 12);
}

TEST(StaticSlidingWindowLayerTest, ResetAfterWrapsStartsAgainFromEmpty) {
    StaticSlidingWindowLayer layer(8, 3);
    for (int token = 1; token <= 7; ++token) {
        layer.update(states({static_cast<float>(token)}), states({static_cast<float>(-token)}));
    }
    layer.reset();
    EXPECT_EQ(layer.seqLength(), 0);
    EXPECT_EQ(values(layer.keys()), (Values{0, 0, 0}));
    EXPECT_EQ(layer.maskSizes(1), (MaskSizes{3, 0}));
    NaiveStaticWindow naive{3};
    int next = 1;
    compareWithNaive(layer, naive, {2, 1, 1, 1, 3, 1, 1}, next);
}

TEST(StaticSlidingWindowLayerTest, EmptyUpdateOfAFullWindowIsRefused) {
    StaticSlidingWindowLayer layer(3, 3);
    layer.update(rangeStates(1, 3), -rangeStates(1, 3));
    EXPECT_TRUE(refuses(
        [&] {
            layer.update(at::zeros({1, 1, 0, 1}), at::zeros({1, 1, 0, 1}));
        },
        ErrorKind::Runtime, {"0 tokens"}));
    EXPECT_EQ(layer.seqLength(), 3);
    EXPECT_EQ(values(layer.keys()), (Values{1, 2, 3}));
    runSteps(layer, {Step{{4}, {3, 1}, {2, 3, 4}, {2, 3, 4}, 4}});
}

TEST(StaticSlidingWindowLayerTest, WindowBelowOneIsRefused) {
    EXPECT_TRUE(
        refuses([] { StaticSlidingWindowLayer layer(8, 0); }, ErrorKind::Value, {"sliding_window", "0"}));
}

TEST(StaticSlidingWindowLayerTest, CropIsRefusedLikeEveryStaticLayer) {
    StaticSlidingWindowLayer layer(8, 4);
    layer.update(rangeStates(1, 2), -rangeStates(1, 2));
    EXPECT_TRUE(
        refuses([&] { layer.crop(1); }, ErrorKind::Attribute, {"'StaticSlidingWindowLayer'", "crop"}));
    EXPECT_EQ(layer.seqLength(), 2);
}

TEST(StaticSlidingWindowLayerTest, LazyInitializationAllocatesTheClippedWindow) {
    StaticSlidingWindowLayer layer(3, 8);
    layer.lazyInitialization(at::zeros({2, 4, 0, 6}), at::zeros({2, 4, 0, 6}));
    EXPECT_EQ(layer.keys().sizes(), (at::IntArrayRef{2, 4, 3, 6}));
    EXPECT_EQ(layer.values().sizes(), (at::IntArrayRef{2, 4, 3, 6}));
    EXPECT_EQ(layer.keys().abs().sum().item<float>(), 0.f);
    EXPECT_EQ(layer.seqLength(), 0);
    EXPECT_EQ(layer.maxBatchSize(), 2);
}

TEST(StaticSlidingWindowLayerTest, OffloadAndPrefetchAfterWrapsKeepTheWindow) {
    StaticSlidingWindowLayer layer(8, 3);
    NaiveStaticWindow naive{3};
    int next = 1;
    compareWithNaive(layer, naive, {1, 1, 1, 1, 1}, next);
    layer.offload();
    layer.prefetch();
    EXPECT_EQ(layer.currentDevice(), at::Device(at::kCPU));
    compareWithNaive(layer, naive, {1, 1, 2, 1}, next);
}

} // namespace
} // namespace kvscope::cache
