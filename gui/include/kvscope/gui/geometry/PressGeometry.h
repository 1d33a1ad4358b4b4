// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gui/geometry/OccupancyGeometry.h"
#include "kvscope/trace/Event.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace kvscope::gui {

/// A kept token's press score: the mean over the KV heads that kept its position.
struct PositionScore {
    std::int64_t position = 0;
    double score = 0.0;
    bool operator==(const PositionScore&) const = default;
};

/// Pure geometry of what a cache press did to one layer, from its latest compression event (sessions/
/// FORMAT.md kind 15): which positions it dropped, laid over the occupancy map's runs, and how each kept
/// token scored. An event whose lists disagree with its counts yields nothing.
class PressGeometry {
public:
    /// Runs of dropped positions in position order: Dropped where no KV head holds the position any more
    /// (this or an earlier compression dropped it), PartlyDropped where some heads still do. From the kept
    /// positions when the event records them (exact), else from the recorded (every k-th) dropped ones.
    static std::vector<SlotSegment> droppedSegments(const trace::CompressionEvent& event);
    /// `base` (runs in position order) with `dropped` laid over it: a dropped run replaces what lies under
    /// it, and runs of one state that touch are merged.
    static std::vector<SlotSegment> overlaid(const std::vector<SlotSegment>& base,
                                             const std::vector<SlotSegment>& dropped);
    /// The state at `position` of runs in position order; nullopt outside them.
    static std::optional<SlotState> stateAt(const std::vector<SlotSegment>& segments, std::int64_t position);
    /// The kept positions with their scores, ascending by position; empty where the event carries no kept
    /// scores (format 1.2, H2O, kept positions over the recording limit).
    static std::vector<PositionScore> keptScores(const trace::CompressionEvent& event);
    /// Each score's rank among `scores`, from 0 (the lowest) to 1 (the highest), equal scores sharing their
    /// mean rank; a lone score, or one that is not a number, is 0.5. Ranks, not values: presses pin some
    /// tokens far above the rest (SnapKV's window, StreamingLLM's sinks), which would flatten a linear scale.
    static std::vector<double> rankShades(const std::vector<PositionScore>& scores);
};

} // namespace kvscope::gui
