// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace kvscope::gui {

/// One busy interval of a lane on the session clock (a compute span, an offload or a prefetch copy).
struct TimeBox {
    std::int64_t beginNs = 0;
    std::int64_t endNs = 0;
    std::int32_t layer = -1;
    std::uint8_t colour = 0; ///< palette index chosen by the view
    bool operator==(const TimeBox&) const = default;
};

/// A box after mapping to pixels; merged boxes cover several events.
struct PixelBox {
    double x0 = 0.0;
    double x1 = 0.0;
    std::uint8_t colour = 0;
    std::size_t events = 1;
    bool operator==(const PixelBox&) const = default;
};

/// A lane's vertical extent in pixels.
struct LaneRect {
    double top = 0.0;
    double height = 0.0;
    bool operator==(const LaneRect&) const = default;
};

/// Pure geometry of the transfer timeline (Qt Creator's timelinecoordinates.h): time <-> pixel, lane
/// layout, the visible slice of a lane by binary search, and merging of boxes narrower than a pixel.
class TimelineGeometry {
public:
    /// Pixel of time t when [rangeBegin, rangeEnd] spans [left, left + width].
    static double timeToPixel(double t, double rangeBegin, double rangeEnd, double left, double width);
    static double pixelToTime(double x, double rangeBegin, double rangeEnd, double left, double width);
    /// Lane `lane` of `laneCount` stacked from `top` over `height` pixels, `gap` pixels between lanes.
    static LaneRect laneRect(int lane, int laneCount, double top, double height, double gap);
    /// The lane under pixel y, or -1 outside every lane.
    static int laneAt(double y, int laneCount, double top, double height);
    /// Indices [first, last) of the boxes overlapping [begin, end]. The boxes of one lane are sorted by
    /// begin and do not overlap (a stream runs one copy at a time), so their ends are sorted too. A lane is
    /// anything with size() and operator[] giving a TimeBox: a vector of boxes, or a GanttLane reading the
    /// timeline's spans where they lie.
    template <typename Lane>
    static std::pair<std::size_t, std::size_t> visibleRange(const Lane& boxes, double begin, double end);
    /// Whether a box at pixels [x0, x1) joins the previous one: same colour and touching within
    /// minWidth when either is narrow (or overlapping); another colour only when it is narrow and
    /// starts inside the previous box, where it would be painted over anyway.
    static bool mergesInto(const PixelBox& previous, double x0, double x1, std::uint8_t colour, double minWidth);
    /// Boxes mapped to pixels, each at least `minWidth` wide, merged by mergesInto, so a lane draws at
    /// most ~width boxes at any zoom; a merged box keeps its first box's colour.
    template <typename Lane>
    static std::vector<PixelBox> mergeToPixels(const Lane& boxes, double rangeBegin, double rangeEnd, double left,
                                               double width, double minWidth = 1.0);

private:
    /// The first index in [first, last) whose box `before` says is not before `t`, as std::partition_point.
    template <typename Lane, typename Before>
    static std::size_t firstNotBefore(const Lane& boxes, std::size_t first, std::size_t last, Before before) {
        while (first < last) {
            const std::size_t middle = first + (last - first) / 2;
            if (before(boxes[middle])) {
                first = middle + 1;
            } else {
                last = middle;
            }
        }
        return first;
    }
};

template <typename Lane>
std::pair<std::size_t, std::size_t> TimelineGeometry::visibleRange(const Lane& boxes, double begin, double end) {
    const std::size_t first = firstNotBefore(boxes, 0, boxes.size(),
                                             [begin](const TimeBox& box) { return static_cast<double>(box.endNs) < begin; });
    const std::size_t last = firstNotBefore(boxes, first, boxes.size(),
                                            [end](const TimeBox& box) { return static_cast<double>(box.beginNs) <= end; });
    return {first, last};
}

template <typename Lane>
std::vector<PixelBox> TimelineGeometry::mergeToPixels(const Lane& boxes, double rangeBegin, double rangeEnd,
                                                      double left, double width, double minWidth) {
    std::vector<PixelBox> pixels;
    const auto [first, last] = visibleRange(boxes, rangeBegin, rangeEnd);
    const auto toPixels = [&](const TimeBox& box) {
        const double x0 = std::max(timeToPixel(static_cast<double>(box.beginNs), rangeBegin, rangeEnd, left, width),
                                   left - 1.0);
        const double x1 = std::min(timeToPixel(static_cast<double>(box.endNs), rangeBegin, rangeEnd, left, width),
                                   left + width + 1.0);
        return std::pair{x0, std::max(x1, x0 + minWidth)};
    };
    std::size_t index = first;
    while (index < last) {
        const TimeBox box = boxes[index];
        const auto [x0, x1] = toPixels(box);
        if (!pixels.empty() && mergesInto(pixels.back(), x0, x1, box.colour, minWidth)) {
            pixels.back().x1 = std::max(pixels.back().x1, x1);
            ++pixels.back().events;
        } else {
            pixels.push_back({x0, x1, box.colour, 1});
        }
        ++index;
        // Zoomed out, thousands of boxes start inside the pixel just drawn. A lane's boxes do not
        // overlap, so all of them but the last also end inside it: they are narrow, merge whatever
        // their colour and only widen it, so they are counted rather than visited (the last one is
        // visited, as it may be wide). The result is what visiting each would give.
        const double boundary = pixelToTime(pixels.back().x1, rangeBegin, rangeEnd, left, width);
        const std::size_t next = firstNotBefore(
            boxes, index, last, [boundary](const TimeBox& b) { return static_cast<double>(b.beginNs) < boundary; });
        const std::size_t inside = next - index;
        if (inside >= 2) {
            pixels.back().x1 = std::max(pixels.back().x1, toPixels(boxes[index + inside - 2]).second);
            pixels.back().events += inside - 1;
            index += inside - 1;
        }
    }
    return pixels;
}

} // namespace kvscope::gui
