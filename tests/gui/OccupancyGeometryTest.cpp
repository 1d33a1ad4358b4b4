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
        std::int64_t position, extent;
        double width, x;
    };
    for (const Case& test : std::vector<Case>{{0, 100, 500, 0}, {50, 100, 500, 250}, {100, 100, 500, 500},
                                              {1, 32768, 1024, 1.0 / 32.0}, {5, 0, 100, 0}}) {
        EXPECT_DOUBLE_EQ(OccupancyGeometry::positionToX(test.position, test.extent, test.width), test.x);
    }
    struct Back {
        double x;
        std::int64_t extent;
        double width;
        std::int64_t position;
    };
    for (const Back& test : std::vector<Back>{{0, 100, 500, 0}, {4.99, 100, 500, 0}, {5, 100, 500, 1},
                                              {499.9, 100, 500, 99}, {800, 100, 500, 99}, {-3, 100, 500, 0}}) {
        EXPECT_EQ(OccupancyGeometry::xToPosition(test.x, test.extent, test.width), test.position) << test.x;
    }
}

} // namespace
} // namespace kvscope::gui
