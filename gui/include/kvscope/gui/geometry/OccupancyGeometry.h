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
};
inline constexpr int kSlotStateCount = 5;

/// A run of positions [begin, end) in one state.
struct SlotSegment {
    std::int64_t begin = 0;
    std::int64_t end = 0;
    SlotState state = SlotState::FullPrecision;
    bool operator==(const SlotSegment&) const = default;
};

/// Pure geometry of the occupancy map (layers x token positions). A layer's positions form at most
/// four runs, so the map costs O(layers) rectangles at any session length.
class OccupancyGeometry {
public:
    /// Runs in position order: [0, seq - stored) slid out, then the held tokens (quantized ones first,
    /// since a quantized layer's store holds the oldest; all Offloaded when the layer is on the host),
    /// then `capacity - stored` reserved positions after seqLength. Empty for an uninitialised layer.
    static std::vector<SlotSegment> segmentsOf(const trace::LayerState& layer);
    /// The state at one position; nullopt where nothing is allocated.
    static std::optional<SlotState> stateAt(const trace::LayerState& layer, std::int64_t position);
    /// Positions the map spans: the largest end of any layer's segments (at least 1).
    static std::int64_t positionExtent(const trace::StepState& state);
    /// Left pixel edge of a position in a map `width` pixels wide spanning `extent` positions.
    static double positionToX(std::int64_t position, std::int64_t extent, double width);
    /// The position under pixel x (clamped to [0, extent - 1]).
    static std::int64_t xToPosition(double x, std::int64_t extent, double width);
};

} // namespace kvscope::gui
