// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/geometry/MaskGeometry.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kvscope::gui {
namespace {

// Draws a mask as rows of '#' (attends) and '.' (masked), from allowed(): the tables below read like
// the reference's mask printouts.
std::vector<std::string> picture(const MaskShape& shape) {
    std::vector<std::string> rows;
    for (std::int64_t row = 0; row < shape.queryLength; ++row) {
        std::string line;
        for (std::int64_t column = 0; column < shape.kvLength; ++column) {
            line += MaskGeometry::allowed(shape, row, column) ? '#' : '.';
        }
        rows.push_back(line);
    }
    return rows;
}

TEST(MaskGeometryTest, PrefillMasks) {
    const MaskShape causal{MaskKind::Full, 0, 4, 0, 4, 0};
    EXPECT_EQ(picture(causal), (std::vector<std::string>{"#...", "##..", "###.", "####"}));
    const MaskShape sliding{MaskKind::Sliding, 2, 4, 0, 4, 0};
    EXPECT_EQ(picture(sliding), (std::vector<std::string>{"#...", "##..", ".##.", "..##"}));
    const MaskShape chunked{MaskKind::Chunked, 2, 5, 0, 5, 0};
    EXPECT_EQ(picture(chunked), (std::vector<std::string>{"#....", "##...", "..#..", "..##.", "....#"}));
}

TEST(MaskGeometryTest, DecodeStepWithOffset) {
    // Query at position 9; keys start at kv_offset 6 (a sliding layer that dropped 0..5), window 3.
    const MaskShape sliding{MaskKind::Sliding, 3, 1, 9, 4, 6};
    EXPECT_EQ(picture(sliding), (std::vector<std::string>{".###"}));
    // A static layer's kv_length covers its whole buffer; positions after the query stay masked.
    const MaskShape padded{MaskKind::Full, 0, 1, 5, 8, 0};
    EXPECT_EQ(picture(padded), (std::vector<std::string>{"######.."}));
}

TEST(MaskGeometryTest, AllowedColumnsAreClippedIntervals) {
    struct Case {
        MaskShape shape;
        std::int64_t row;
        std::pair<std::int64_t, std::int64_t> expected;
    };
    const std::vector<Case> cases = {
        {{MaskKind::Full, 0, 3, 10, 13, 0}, 0, {0, 11}},
        {{MaskKind::Full, 0, 3, 10, 13, 0}, 2, {0, 13}},
        {{MaskKind::Sliding, 4, 1, 20, 4, 17}, 0, {0, 4}},
        {{MaskKind::Chunked, 8, 1, 17, 18, 0}, 0, {16, 18}},
        {{MaskKind::Full, 0, 1, 2, 4, 5}, 0, {0, 0}}, // every key is after the query
    };
    for (const Case& test : cases) {
        EXPECT_EQ(MaskGeometry::allowedColumns(test.shape, test.row), test.expected);
    }
}

TEST(MaskGeometryTest, ShapeOfLayerState) {
    trace::LayerState layer;
    layer.seqLength = 30;
    layer.queryLength = 1;
    layer.kvLength = 8;
    layer.kvOffset = 22;
    const MaskShape shape = MaskGeometry::shapeOf(layer, MaskKind::Sliding, 8);
    EXPECT_EQ(shape, (MaskShape{MaskKind::Sliding, 8, 1, 29, 8, 22}));
    EXPECT_EQ(MaskGeometry::shapeOf(layer, MaskKind::Chunked, 0).kind, MaskKind::Full)
        << "a chunk size of 0 means no chunking";
}

TEST(MaskGeometryTest, ShapeForTakesTheKindFromTheLayer) {
    trace::LayerState layer;
    layer.seqLength = 30;
    layer.queryLength = 1;
    layer.kvLength = 30;
    layer.windowSize = 8;
    struct Case {
        trace::LayerKind kind;
        std::int64_t chunk;
        MaskKind expected;
        std::int64_t span;
    };
    const std::vector<Case> cases = {
        {trace::LayerKind::Dynamic, 0, MaskKind::Full, 0},
        {trace::LayerKind::DynamicSlidingWindow, 0, MaskKind::Sliding, 8},
        {trace::LayerKind::StaticSlidingWindow, 0, MaskKind::Sliding, 8},
        {trace::LayerKind::Dynamic, 16, MaskKind::Chunked, 16},
    };
    for (const Case& test : cases) {
        layer.kind = test.kind;
        const MaskShape shape = MaskGeometry::shapeFor(layer, test.chunk);
        EXPECT_EQ(shape.kind, test.expected) << static_cast<int>(test.kind) << " chunk " << test.chunk;
        EXPECT_EQ(shape.span, test.span);
    }
}

} // namespace
} // namespace kvscope::gui
