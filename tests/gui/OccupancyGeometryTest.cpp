// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/geometry/OccupancyGeometry.h"

#include <gtest/gtest.h>

namespace kvscope::gui {
namespace {

using trace::LayerKind;
using trace::LayerState;
using trace::Residency;

LayerState layer(LayerKind kind, std::int64_t seq, std::int64_t stored, std::int64_t capacity = -1,
                 std::int64_t quantized = 0, Residency residency = Residency::Device) {
    LayerState state;
    state.initialized = true;
    state.kind = kind;
    state.seqLength = seq;
    state.storedTokens = stored;
    state.capacity = capacity;
    state.quantizedTokens = quantized;
    state.residency = residency;
    return state;
}

LayerState pressed(LayerState state, std::int64_t evicted) {
    state.evictedTokens = evicted;
    return state;
}

struct SegmentCase {
    const char* name;
    LayerState layer;
    std::vector<SlotSegment> expected;
};

TEST(OccupancyGeometryTest, SegmentsPerLayerKind) {
    const std::vector<SegmentCase> cases = {
        {"dynamic", layer(LayerKind::Dynamic, 10, 10), {{0, 10, SlotState::FullPrecision}}},
        {"static with free capacity", layer(LayerKind::Static, 10, 10, 16),
         {{0, 10, SlotState::FullPrecision}, {10, 16, SlotState::Reserved}}},
        {"sliding window slid", layer(LayerKind::DynamicSlidingWindow, 40, 16),
         {{0, 24, SlotState::SlidOut}, {24, 40, SlotState::FullPrecision}}},
        {"static sliding, window not yet full", layer(LayerKind::StaticSlidingWindow, 5, 5, 8),
         {{0, 5, SlotState::FullPrecision}, {5, 8, SlotState::Reserved}}},
        {"quantized store then residual", layer(LayerKind::Quantized, 20, 20, -1, 16),
         {{0, 16, SlotState::Quantized}, {16, 20, SlotState::FullPrecision}}},
        {"offloaded", layer(LayerKind::Dynamic, 7, 7, -1, 0, Residency::Host), {{0, 7, SlotState::Offloaded}}},
        {"stored beyond seq is clamped", layer(LayerKind::Dynamic, 3, 9), {{0, 3, SlotState::FullPrecision}}},
        {"empty layer", layer(LayerKind::Dynamic, 0, 0), {}},
        {"pressed dynamic: 6 of 14 dropped, 2 tokens since", pressed(layer(LayerKind::Dynamic, 10, 10), 6),
         {{0, 16, SlotState::FullPrecision}}},
        {"pressed quantized: the kept store spans the prompt", pressed(layer(LayerKind::Quantized, 9, 9, -1, 7), 7),
         {{0, 14, SlotState::Quantized}, {14, 16, SlotState::FullPrecision}}},
        {"sliding evictions stay a slid-out prefix", pressed(layer(LayerKind::DynamicSlidingWindow, 40, 16), 24),
         {{0, 24, SlotState::SlidOut}, {24, 40, SlotState::FullPrecision}}},
    };
    for (const SegmentCase& test : cases) {
        EXPECT_EQ(OccupancyGeometry::segmentsOf(test.layer), test.expected) << test.name;
    }
    LayerState fresh;
    EXPECT_TRUE(OccupancyGeometry::segmentsOf(fresh).empty()) << "an uninitialised layer shows nothing";
}

TEST(OccupancyGeometryTest, StateAtAndExtent) {
    const LayerState sliding = layer(LayerKind::DynamicSlidingWindow, 40, 16);
    EXPECT_EQ(OccupancyGeometry::stateAt(sliding, 0), SlotState::SlidOut);
    EXPECT_EQ(OccupancyGeometry::stateAt(sliding, 23), SlotState::SlidOut);
    EXPECT_EQ(OccupancyGeometry::stateAt(sliding, 24), SlotState::FullPrecision);
    EXPECT_EQ(OccupancyGeometry::stateAt(sliding, 40), std::nullopt);
    trace::StepState state;
    state.layers = {sliding, layer(LayerKind::Static, 10, 10, 64)};
    EXPECT_EQ(OccupancyGeometry::positionExtent(state), 64);
    EXPECT_EQ(OccupancyGeometry::positionExtent(trace::StepState{}), 1);
}

TEST(OccupancyGeometryTest, PositionPixelMapping) {
    struct Case {
        std::int64_t position;
        PositionSpan span;
        double width, x;
    };
    for (const Case& test : std::vector<Case>{{0, {0, 100}, 500, 0},
                                              {50, {0, 100}, 500, 250},
                                              {100, {0, 100}, 500, 500},
                                              {1, {0, 32768}, 1024, 1.0 / 32.0},
                                              {5, {0, 0}, 100, 0},
                                              {30, {20, 10}, 500, 500}, // zoomed: the span's end
                                              {25, {20, 10}, 500, 250},
                                              {10, {20, 10}, 500, -500}}) { // left of the span
        EXPECT_DOUBLE_EQ(OccupancyGeometry::positionToX(test.position, test.span, test.width), test.x);
    }
    struct Back {
        double x;
        PositionSpan span;
        double width;
        std::int64_t position;
    };
    for (const Back& test : std::vector<Back>{{0, {0, 100}, 500, 0},     {4.99, {0, 100}, 500, 0},
                                              {5, {0, 100}, 500, 1},     {499.9, {0, 100}, 500, 99},
                                              {800, {0, 100}, 500, 99},  {-3, {0, 100}, 500, 0},
                                              {0, {20, 10}, 500, 20},    {260, {20, 10}, 500, 25},
                                              {900, {20, 10}, 500, 29},  {-9, {20, 10}, 500, 20}}) {
        EXPECT_EQ(OccupancyGeometry::xToPosition(test.x, test.span, test.width), test.position) << test.x;
    }
}

TEST(OccupancyGeometryTest, ZoomKeepsThePositionUnderThePointer) {
    struct Case {
        const char* what;
        PositionSpan span;
        double factor, x;
        std::int64_t extent, minCount;
        PositionSpan expected;
    };
    const std::vector<Case> cases = {
        {"in at the left edge", {0, 100}, 0.5, 0, 100, 8, {0, 50}},
        {"in at the centre", {0, 100}, 0.5, 500, 100, 8, {25, 50}},
        {"in at the right edge", {0, 100}, 0.5, 999, 100, 8, {50, 50}},
        {"in, not past the minimum", {40, 10}, 0.1, 500, 100, 8, {41, 8}},
        {"out from a zoomed span", {40, 20}, 2.0, 500, 100, 8, {30, 40}},
        {"out, clamped to the extent", {10, 80}, 2.0, 500, 100, 8, {0, 100}},
        {"out near the end", {90, 10}, 2.0, 999, 100, 8, {80, 20}},
        {"out at the end, shifted back", {90, 10}, 2.0, 500, 100, 8, {80, 20}},
        {"a small span still grows", {3, 2}, 1.1, 0, 100, 1, {3, 3}},
        {"a small span still shrinks", {3, 3}, 0.9, 0, 100, 1, {3, 2}},
        {"an extent under the minimum", {0, 5}, 0.5, 500, 5, 8, {0, 5}},
    };
    for (const Case& test : cases) {
        const PositionSpan zoomed =
            OccupancyGeometry::zoomed(test.span, test.factor, test.x, 1000, test.extent, test.minCount);
        EXPECT_EQ(zoomed, test.expected) << test.what;
    }
    // Many zooms in a row about one pixel keep its position exactly: no rounding drift.
    PositionSpan span{0, 5000};
    const std::int64_t under = OccupancyGeometry::xToPosition(377, span, 1000);
    for (int notch = 0; notch < 40; ++notch) {
        span = OccupancyGeometry::zoomed(span, 0.8, 377, 1000, 5000, 4);
        ASSERT_EQ(OccupancyGeometry::xToPosition(377, span, 1000), under) << notch;
    }
    EXPECT_EQ(span.count, 4);
}

TEST(OccupancyGeometryTest, ClampedSpansLieInsideTheExtent) {
    EXPECT_EQ(OccupancyGeometry::clamped({90, 20}, 100), (PositionSpan{80, 20}));
    EXPECT_EQ(OccupancyGeometry::clamped({-5, 20}, 100), (PositionSpan{0, 20}));
    EXPECT_EQ(OccupancyGeometry::clamped({10, 500}, 100), (PositionSpan{0, 100}));
    EXPECT_EQ(OccupancyGeometry::clamped({10, 0}, 100), (PositionSpan{10, 1}));
    EXPECT_EQ(OccupancyGeometry::clamped({10, 20}, 0), (PositionSpan{0, 1}));
}

TEST(OccupancyGeometryTest, ColumnsAreLabelledOnlyWhereALabelFits) {
    struct Case {
        PositionSpan span;
        double width, labelWidth;
        std::size_t labels;
    };
    for (const Case& test : std::vector<Case>{{{0, 100}, 1000, 12, 0},   // 10 px columns: too narrow
                                              {{0, 80}, 1000, 12, 80},   // 12.5 px: every column
                                              {{40, 20}, 1000, 12, 20},  // zoomed in
                                              {{0, 0}, 1000, 12, 0}}) {
        EXPECT_EQ(OccupancyGeometry::columnLabels(test.span, test.width, test.labelWidth).size(), test.labels)
            << test.span.first << "+" << test.span.count;
    }
    const std::vector<ColumnLabel> labels = OccupancyGeometry::columnLabels({40, 20}, 1000, 12);
    EXPECT_EQ(labels.front(), (ColumnLabel{40, 0, 50}));
    EXPECT_EQ(labels.back(), (ColumnLabel{59, 950, 1000}));
}

} // namespace
} // namespace kvscope::gui
