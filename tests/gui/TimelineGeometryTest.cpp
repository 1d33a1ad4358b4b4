// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/geometry/TimelineGeometry.h"

#include <gtest/gtest.h>

#include <random>

namespace kvscope::gui {
namespace {

TEST(TimelineGeometryTest, TimePixelRoundTrip) {
    struct Case {
        double t, begin, end, left, width, x;
    };
    const std::vector<Case> cases = {
        {0, 0, 100, 0, 1000, 0},       {50, 0, 100, 0, 1000, 500},    {100, 0, 100, 10, 1000, 1010},
        {150, 100, 200, 0, 200, 100}, {-50, 0, 100, 0, 100, -50},    {5, 5, 5, 7, 100, 7}, // empty range
    };
    for (const Case& test : cases) {
        const double x = TimelineGeometry::timeToPixel(test.t, test.begin, test.end, test.left, test.width);
        EXPECT_DOUBLE_EQ(x, test.x);
        if (test.end > test.begin) {
            EXPECT_DOUBLE_EQ(TimelineGeometry::pixelToTime(x, test.begin, test.end, test.left, test.width), test.t);
        }
    }
}

TEST(TimelineGeometryTest, LaneLayout) {
    EXPECT_EQ(TimelineGeometry::laneRect(0, 4, 10, 100, 2), (LaneRect{11, 23}));
    EXPECT_EQ(TimelineGeometry::laneRect(3, 4, 10, 100, 2), (LaneRect{86, 23}));
    EXPECT_EQ(TimelineGeometry::laneRect(0, 0, 10, 100, 2), (LaneRect{10, 0}));
    struct Case {
        double y;
        int lane;
    };
    for (const Case& test : std::vector<Case>{{9.9, -1}, {10, 0}, {34.9, 0}, {35, 1}, {109.9, 3}, {110, -1}}) {
        EXPECT_EQ(TimelineGeometry::laneAt(test.y, 4, 10, 100), test.lane) << test.y;
    }
}

TEST(TimelineGeometryTest, VisibleRangeByBinarySearch) {
    const std::vector<TimeBox> lane = {{0, 10}, {20, 30}, {40, 50}, {60, 70}};
    struct Case {
        double begin, end;
        std::pair<std::size_t, std::size_t> range;
    };
    const std::vector<Case> cases = {
        {0, 100, {0, 4}}, {25, 45, {1, 3}}, {11, 19, {1, 1}}, {10, 20, {0, 2}}, {71, 90, {4, 4}}, {-10, -1, {0, 0}},
    };
    for (const Case& test : cases) {
        EXPECT_EQ(TimelineGeometry::visibleRange(lane, test.begin, test.end), test.range) << test.begin;
    }
}

TEST(TimelineGeometryTest, SubPixelBoxesMerge) {
    // 1000 boxes of 1 ns every 2 ns over 2000 ns drawn 100 px wide: 20 ns per pixel, so they collapse.
    std::vector<TimeBox> dense;
    for (int index = 0; index < 1000; ++index) {
        dense.push_back({index * 2, index * 2 + 1, 0, 0});
    }
    const std::vector<PixelBox> merged = TimelineGeometry::mergeToPixels(dense, 0, 2000, 0, 100);
    ASSERT_EQ(merged.size(), 1u);
    EXPECT_EQ(merged[0].events, 1000u);
    EXPECT_NEAR(merged[0].x0, 0.0, 1e-9);
    EXPECT_NEAR(merged[0].x1, 100.0, 1.0);

    // Wide boxes stay apart; a colour change starts a new box; a tiny box gets one pixel.
    const std::vector<TimeBox> wide = {{0, 100, 0, 0}, {200, 300, 0, 0}, {305, 306, 0, 1}};
    const std::vector<PixelBox> apart = TimelineGeometry::mergeToPixels(wide, 0, 1000, 0, 1000);
    ASSERT_EQ(apart.size(), 3u);
    EXPECT_EQ(apart[0], (PixelBox{0, 100, 0, 1}));
    EXPECT_EQ(apart[1], (PixelBox{200, 300, 0, 1}));
    EXPECT_EQ(apart[2], (PixelBox{305, 306, 1, 1}));

    // Dense boxes of alternating colours (a stream serving every layer in turn) collapse too.
    std::vector<TimeBox> alternating;
    for (int index = 0; index < 1000; ++index) {
        alternating.push_back({index * 2, index * 2 + 1, index % 8, static_cast<std::uint8_t>(index % 8)});
    }
    const std::vector<PixelBox> mixed = TimelineGeometry::mergeToPixels(alternating, 0, 2000, 0, 100);
    ASSERT_EQ(mixed.size(), 1u);
    EXPECT_EQ(mixed[0].colour, 0);
    EXPECT_EQ(mixed[0].events, 1000u);

    // A wide box of another colour next to a narrow one stays separate.
    const std::vector<TimeBox> neighbours = {{0, 1, 0, 0}, {1, 50, 1, 1}};
    EXPECT_EQ(TimelineGeometry::mergeToPixels(neighbours, 0, 100, 0, 100).size(), 2u);

    // Only the visible slice is mapped.
    EXPECT_EQ(TimelineGeometry::mergeToPixels(wide, 150, 180, 0, 100).size(), 0u);
}

// mergeToPixels visiting every box, as the specification of what its skipping must give.
std::vector<PixelBox> mergeEachBox(std::span<const TimeBox> boxes, double rangeBegin, double rangeEnd, double left,
                                   double width) {
    std::vector<PixelBox> pixels;
    const auto [first, last] = TimelineGeometry::visibleRange(boxes, rangeBegin, rangeEnd);
    for (std::size_t index = first; index < last; ++index) {
        const TimeBox& box = boxes[index];
        const double x0 = std::max(TimelineGeometry::timeToPixel(box.beginNs, rangeBegin, rangeEnd, left, width), left - 1.0);
        double x1 = std::min(TimelineGeometry::timeToPixel(box.endNs, rangeBegin, rangeEnd, left, width), left + width + 1.0);
        x1 = std::max(x1, x0 + 1.0);
        if (!pixels.empty() && TimelineGeometry::mergesInto(pixels.back(), x0, x1, box.colour, 1.0)) {
            pixels.back().x1 = std::max(pixels.back().x1, x1);
            ++pixels.back().events;
        } else {
            pixels.push_back({x0, x1, box.colour, 1});
        }
    }
    return pixels;
}

TEST(TimelineGeometryTest, SkippingBoxesInsideAPixelGivesWhatVisitingEachGives) {
    std::mt19937_64 random(5);
    for (int trial = 0; trial < 200; ++trial) {
        // A lane of gapped, non-overlapping boxes of mixed widths (1 ns .. 50 us) and four colours.
        std::vector<TimeBox> lane;
        std::int64_t t = 0;
        const int count = 1 + static_cast<int>(random() % 4000);
        for (int index = 0; index < count; ++index) {
            t += static_cast<std::int64_t>(random() % 3000);
            const std::int64_t length = random() % 10 == 0 ? 1 + static_cast<std::int64_t>(random() % 50000)
                                                           : 1 + static_cast<std::int64_t>(random() % 200);
            lane.push_back({t, t + length, 0, static_cast<std::uint8_t>(random() % 4)});
            t += length;
        }
        // Zoomed out over everything, or into a random slice, at a random width.
        const double begin = trial % 2 == 0 ? 0.0 : static_cast<double>(random() % static_cast<std::uint64_t>(t + 1));
        const double end = trial % 2 == 0 ? static_cast<double>(t) : begin + 1.0 + static_cast<double>(random() % 200000);
        const double width = 50.0 + static_cast<double>(random() % 1600);
        const std::vector<PixelBox> skipped = TimelineGeometry::mergeToPixels(lane, begin, end, 7.0, width);
        const std::vector<PixelBox> visited = mergeEachBox(lane, begin, end, 7.0, width);
        ASSERT_EQ(skipped.size(), visited.size()) << "trial " << trial;
        for (std::size_t index = 0; index < skipped.size(); ++index) {
            EXPECT_EQ(skipped[index].colour, visited[index].colour) << "trial " << trial << " box " << index;
            EXPECT_EQ(skipped[index].events, visited[index].events) << "trial " << trial << " box " << index;
            EXPECT_NEAR(skipped[index].x0, visited[index].x0, 1e-6);
            EXPECT_NEAR(skipped[index].x1, visited[index].x1, 1e-6);
        }
    }
}

} // namespace
} // namespace kvscope::gui
