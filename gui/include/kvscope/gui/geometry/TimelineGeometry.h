// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

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
    /// begin and do not overlap (a stream runs one copy at a time), so their ends are sorted too.
    static std::pair<std::size_t, std::size_t> visibleRange(std::span<const TimeBox> boxes, double begin,
                                                            double end);
    /// Whether a box at pixels [x0, x1) joins the previous one: same colour and touching within
    /// minWidth when either is narrow (or overlapping); another colour only when it is narrow and
    /// starts inside the previous box, where it would be painted over anyway.
    static bool mergesInto(const PixelBox& previous, double x0, double x1, std::uint8_t colour, double minWidth);
    /// Boxes mapped to pixels, each at least `minWidth` wide, merged by mergesInto, so a lane draws at
    /// most ~width boxes at any zoom; a merged box keeps its first box's colour.
    static std::vector<PixelBox> mergeToPixels(std::span<const TimeBox> boxes, double rangeBegin,
                                               double rangeEnd, double left, double width, double minWidth = 1.0);
};

} // namespace kvscope::gui
