// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/trace/LayerKind.h"

#include <gtest/gtest.h>
#include <set>
#include <string>

using namespace kvscope::trace;

namespace {

constexpr LayerKind kAllKinds[] = {
    LayerKind::Dynamic,
    LayerKind::DynamicSlidingWindow,
    LayerKind::Static,
    LayerKind::StaticSlidingWindow,
    LayerKind::Quantized,
    LayerKind::LinearAttention,
    LayerKind::LinearAttentionAndFullAttention,
};

} // namespace

TEST(LayerKindTest, NamesAreUniqueAndRoundTrip) {
    std::set<std::string> names;
    for (LayerKind kind : kAllKinds) {
        const std::string name(toString(kind));
        EXPECT_NE(name, "unknown");
        EXPECT_TRUE(names.insert(name).second) << name;
        EXPECT_EQ(layerKindFromString(name), kind) << name;
    }
}

TEST(LayerKindTest, NamesAreStable) {
    // Written to JSON and session files: changing one breaks saved sessions.
    EXPECT_EQ(toString(LayerKind::Dynamic), "dynamic");
    EXPECT_EQ(toString(LayerKind::DynamicSlidingWindow), "dynamic_sliding_window");
    EXPECT_EQ(toString(LayerKind::StaticSlidingWindow), "static_sliding_window");
    EXPECT_EQ(toString(LayerKind::LinearAttentionAndFullAttention), "linear_attention_and_full_attention");
    EXPECT_EQ(static_cast<int>(LayerKind::Quantized), 4);
}

TEST(LayerKindTest, AcceptsEnumeratorNamesAndRejectsOthers) {
    EXPECT_EQ(layerKindFromString("StaticSlidingWindow"), LayerKind::StaticSlidingWindow);
    EXPECT_EQ(layerKindFromString("Quantized"), LayerKind::Quantized);
    EXPECT_FALSE(layerKindFromString("").has_value());
    EXPECT_FALSE(layerKindFromString("DYNAMIC").has_value());
    EXPECT_FALSE(layerKindFromString("sliding").has_value());
}

TEST(LayerKindTest, OnlySlidingKindsAreSlidingWindows) {
    for (LayerKind kind : kAllKinds) {
        const bool expected =
            kind == LayerKind::DynamicSlidingWindow || kind == LayerKind::StaticSlidingWindow;
        EXPECT_EQ(isSlidingWindow(kind), expected) << toString(kind);
    }
}
