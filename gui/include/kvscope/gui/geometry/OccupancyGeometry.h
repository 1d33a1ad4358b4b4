// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/trace/LayerState.h"
#include "kvscope/trace/StepState.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace kvscope::gui {

/// What one token position of one layer holds at a step, as the occupancy map colours it.
enum class SlotState : std::uint8_t {
    Reserved, ///< allocated but unused (static layers' free capacity)
    FullPrecision, ///< held on the device at full precision
    Quantized, ///< held in a quantized store
    SlidOut, ///< seen, then evicted by a sliding window (or cropped storage)
    Offloaded, ///< held, but in host memory
    Dropped, ///< evicted by a cache press from every KV head
    PartlyDropped, ///< evicted by a cache press from some KV heads only
};
inline constexpr int kSlotStateCount = 7;
/// Whether a state is one only sessions with a cache press show (the legend lists them for those alone).
inline constexpr bool isPressState(SlotState state) {
    return state == SlotState::Dropped || state == SlotState::PartlyDropped;
}

/// A run of positions [begin, end) in one state.
struct SlotSegment {
    std::int64_t begin = 0;
    std::int64_t end = 0;
    SlotState state = SlotState::FullPrecision;
    bool operator==(const SlotSegment&) const = default;
};

/// The token positions the map shows: [first, first + count).
struct PositionSpan {
    std::int64_t first = 0;
    std::int64_t count = 1;
    bool operator==(const PositionSpan&) const = default;
};

/// A column label: the position it names and its column's pixel edges from the map's left.
struct ColumnLabel {
    std::int64_t position = 0;
    double x0 = 0.0;
    double x1 = 0.0;
    bool operator==(const ColumnLabel&) const = default;
};

/// Pure geometry of the occupancy map (layers x token positions). A layer's positions form at most
/// four runs, so the map costs O(layers) rectangles at any session length.
class OccupancyGeometry {
public:
    /// Runs in position order: [0, seq - stored) slid out, then the held tokens (quantized ones first,
    /// since a quantized layer's store holds the oldest; all Offloaded when the layer is on the host),
    /// then `capacity - stored` reserved positions after seqLength. Empty for an uninitialised layer.
    /// A layer a press compressed (evicted tokens, no sliding window) keeps its tokens' positions: it
    /// spans every position seen, held throughout; PressGeometry lays the dropped positions over it.
    static std::vector<SlotSegment> segmentsOf(const trace::LayerState& layer);
    /// The state at one position; nullopt where nothing is allocated.
    static std::optional<SlotState> stateAt(const trace::LayerState& layer, std::int64_t position);
    /// Positions the map spans: the largest end of any layer's segments (at least 1).
    static std::int64_t positionExtent(const trace::StepState& state);
    /// Left pixel edge of a position in a map `width` pixels wide showing `span` (outside the span:
    /// outside [0, width]).
    static double positionToX(std::int64_t position, const PositionSpan& span, double width);
    /// The position under pixel x (clamped to the span).
    static std::int64_t xToPosition(double x, const PositionSpan& span, double width);
    /// `span` inside [0, extent): shifted left where it runs past the end, shortened to the extent,
    /// at least one position.
    static PositionSpan clamped(PositionSpan span, std::int64_t extent);
    /// The span after zooming by `factor` (below 1 zooms in) about pixel x: the position under x stays
    /// under x (unless the span meets an end of [0, extent)); at least `minCount` positions (or the
    /// whole extent).
    static PositionSpan zoomed(const PositionSpan& span, double factor, double x, double width, std::int64_t extent,
                               std::int64_t minCount);
    /// A label per column of the span when columns are at least `labelWidth` pixels wide (a label
    /// fits); none otherwise.
    static std::vector<ColumnLabel> columnLabels(const PositionSpan& span, double width, double labelWidth);
};

} // namespace kvscope::gui
