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

} // namespace kvscope::gui
