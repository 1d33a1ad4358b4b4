// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/geometry/FlushMarkerGeometry.h"

#include <gtest/gtest.h>

#include <vector>

namespace kvscope::gui {
namespace {

using Flush = FlushMarkerGeometry::Flush;
using Marker = FlushMarkerGeometry::Marker;

std::vector<std::vector<double>> rows(const std::vector<Marker>& markers) {
    std::vector<std::vector<double>> result;
    for (const Marker& marker : markers) {
        result.push_back({static_cast<double>(marker.step), marker.height, marker.error});
    }
    return result;
}

// Two layers flushing: layer 0 at steps 4, 8, 12, 16; layer 1 at 8 and 17 (listed out of order).
const std::vector<Flush> kFlushes = {
    {8, 1, 10.0, 3.0}, {4, 0, 4.0, 1.0}, {8, 0, 4.0, 2.0}, {12, 0, 4.0, 0.5},
    {16, 0, 4.0, 1.5}, {17, 1, 9.0, 0.25},
};

TEST(FlushMarkerGeometryTest, OneMarkerPerFlushingStepWhereThereIsRoom) {
    // 20 steps over 200 pixels, 3-pixel markers: every flushing step alone, layers merged per step.
    EXPECT_EQ(rows(FlushMarkerGeometry::markers(kFlushes, -1, 0, 19, 200.0, 3.0)),
              (std::vector<std::vector<double>>{
                  {4, 4, 1}, {8, 10, 3}, {12, 4, 0.5}, {16, 4, 1.5}, {17, 9, 0.25}}));
    // The selected layer's flushes only.
    EXPECT_EQ(rows(FlushMarkerGeometry::markers(kFlushes, 1, 0, 19, 200.0, 3.0)),
              (std::vector<std::vector<double>>{{8, 10, 3}, {17, 9, 0.25}}));
    EXPECT_EQ(rows(FlushMarkerGeometry::markers(kFlushes, 0, 0, 19, 200.0, 3.0)),
              (std::vector<std::vector<double>>{{4, 4, 1}, {8, 4, 2}, {12, 4, 0.5}, {16, 4, 1.5}}));
}

TEST(FlushMarkerGeometryTest, CrowdedFlushesShareAMarker) {
    struct Case {
        std::int64_t first, last;
        double pixels;
        std::vector<std::vector<double>> expected;
    };
    const std::vector<Case> cases = {
        // 20 steps over 15 pixels: 4 steps a marker; buckets [0,4) [4,8) [8,12) [12,16) [16,20).
        {0, 19, 15.0, {{4, 4, 1}, {8, 10, 3}, {12, 4, 0.5}, {16, 9, 1.5}}},
        // 20 steps over 6 pixels: 10 steps a marker; the run's first step, its largest and worst.
        {0, 19, 6.0, {{4, 10, 3}, {12, 9, 1.5}}},
        // Narrower than a marker: one for the whole range.
        {0, 19, 2.0, {{4, 10, 3}}},
        // Only the steps in range: [9, 16] over 100 pixels.
        {9, 16, 100.0, {{12, 4, 0.5}, {16, 4, 1.5}}},
        // No flush in range, and an empty range.
        {0, 3, 100.0, {}},
        {5, 4, 100.0, {}},
    };
    for (const Case& test : cases) {
        EXPECT_EQ(rows(FlushMarkerGeometry::markers(kFlushes, -1, test.first, test.last, test.pixels, 3.0)),
                  test.expected)
            << "steps " << test.first << ".." << test.last << " over " << test.pixels << " px";
    }
}

TEST(FlushMarkerGeometryTest, ALongSessionDrawsAsManyMarkersAsFit) {
    // 131072 steps flushing every 64 (2048 flushing steps) on a 480-pixel plot: at most 160 markers.
    std::vector<Flush> flushes;
    for (std::int64_t step = 63; step < 131072; step += 64) {
        flushes.push_back({step, 0, 64.0, 1.0});
    }
    const auto markers = FlushMarkerGeometry::markers(flushes, -1, 0, 131071, 480.0, 3.0);
    EXPECT_EQ(markers.size(), 160u);
    EXPECT_EQ(markers.front().step, 63);
    EXPECT_EQ(markers.back().step, 130303) << "the first flush at or after 159 x 819.2 = 130252.8";
}

} // namespace
} // namespace kvscope::gui
