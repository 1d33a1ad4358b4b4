// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/geometry/TimelineGeometry.h"

#include <algorithm>
#include <cmath>

namespace kvscope::gui {

double TimelineGeometry::timeToPixel(double t, double rangeBegin, double rangeEnd, double left, double width) {
    const double span = rangeEnd - rangeBegin;
    if (span <= 0.0) {
        return left;
    }
    return left + (t - rangeBegin) * width / span;
}

double TimelineGeometry::pixelToTime(double x, double rangeBegin, double rangeEnd, double left, double width) {
    if (width <= 0.0) {
        return rangeBegin;
    }
    return rangeBegin + (x - left) * (rangeEnd - rangeBegin) / width;
}

LaneRect TimelineGeometry::laneRect(int lane, int laneCount, double top, double height, double gap) {
    if (laneCount <= 0) {
        return {top, 0.0};
    }
    const double pitch = height / laneCount;
    return {top + lane * pitch + gap / 2.0, std::max(0.0, pitch - gap)};
}

int TimelineGeometry::laneAt(double y, int laneCount, double top, double height) {
    if (laneCount <= 0 || height <= 0.0 || y < top || y >= top + height) {
        return -1;
    }
    return std::min(laneCount - 1, static_cast<int>((y - top) * laneCount / height));
}

std::pair<std::size_t, std::size_t> TimelineGeometry::visibleRange(std::span<const TimeBox> boxes, double begin,
                                                                   double end) {
    const auto first = std::lower_bound(boxes.begin(), boxes.end(), begin,
                                        [](const TimeBox& box, double t) { return static_cast<double>(box.endNs) < t; });
    const auto last = std::upper_bound(first, boxes.end(), end,
                                       [](double t, const TimeBox& box) { return t < static_cast<double>(box.beginNs); });
    return {static_cast<std::size_t>(first - boxes.begin()), static_cast<std::size_t>(last - boxes.begin())};
}

bool TimelineGeometry::mergesInto(const PixelBox& previous, double x0, double x1, std::uint8_t colour,
                                  double minWidth) {
    // Widths of boxes widened to minWidth carry rounding: compare with a little slack.
    const double narrowWidth = minWidth * (1.0 + 1e-9);
    const bool thisNarrow = x1 - x0 <= narrowWidth;
    const bool narrow = thisNarrow || previous.x1 - previous.x0 <= narrowWidth;
    if (colour == previous.colour) {
        return x0 <= previous.x1 + minWidth && (narrow || x0 <= previous.x1);
    }
    // Another colour merges only when it is narrow and would be drawn over the previous box anyway.
    return thisNarrow && x0 <= previous.x1;
}

std::vector<PixelBox> TimelineGeometry::mergeToPixels(std::span<const TimeBox> boxes, double rangeBegin,
                                                      double rangeEnd, double left, double width,
                                                      double minWidth) {
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
        const TimeBox& box = boxes[index];
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
        const auto next = std::lower_bound(boxes.begin() + static_cast<std::ptrdiff_t>(index),
                                           boxes.begin() + static_cast<std::ptrdiff_t>(last), boundary,
                                           [](const TimeBox& b, double t) { return static_cast<double>(b.beginNs) < t; });
        const auto inside = static_cast<std::size_t>(next - boxes.begin()) - index;
        if (inside >= 2) {
            pixels.back().x1 = std::max(pixels.back().x1, toPixels(boxes[index + inside - 2]).second);
            pixels.back().events += inside - 1;
            index += inside - 1;
        }
    }
    return pixels;
}

} // namespace kvscope::gui
