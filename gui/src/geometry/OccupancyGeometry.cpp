// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/geometry/OccupancyGeometry.h"

#include <algorithm>
#include <cmath>

namespace kvscope::gui {

std::vector<SlotSegment> OccupancyGeometry::segmentsOf(const trace::LayerState& layer) {
    std::vector<SlotSegment> segments;
    if (!layer.initialized) {
        return segments;
    }
    const std::int64_t seq = std::max<std::int64_t>(layer.seqLength, 0);
    const std::int64_t stored = std::clamp<std::int64_t>(layer.storedTokens, 0, seq);
    const std::int64_t heldBegin = seq - stored;
    auto add = [&](std::int64_t begin, std::int64_t end, SlotState state) {
        if (end > begin) {
            segments.push_back({begin, end, state});
        }
    };
    add(0, heldBegin, SlotState::SlidOut);
    if (layer.residency == trace::Residency::Host) {
        add(heldBegin, seq, SlotState::Offloaded);
    } else {
        const std::int64_t quantizedEnd = heldBegin + std::clamp<std::int64_t>(layer.quantizedTokens, 0, stored);
        add(heldBegin, quantizedEnd, SlotState::Quantized);
        add(quantizedEnd, seq, SlotState::FullPrecision);
    }
    if (layer.capacity > stored) {
        add(seq, seq + (layer.capacity - stored), SlotState::Reserved);
    }
    return segments;
}

std::optional<SlotState> OccupancyGeometry::stateAt(const trace::LayerState& layer, std::int64_t position) {
    for (const SlotSegment& segment : segmentsOf(layer)) {
        if (position >= segment.begin && position < segment.end) {
            return segment.state;
        }
    }
    return std::nullopt;
}

std::int64_t OccupancyGeometry::positionExtent(const trace::StepState& state) {
    std::int64_t extent = 1;
    for (const trace::LayerState& layer : state.layers) {
        const std::vector<SlotSegment> segments = segmentsOf(layer);
        if (!segments.empty()) {
            extent = std::max(extent, segments.back().end);
        }
    }
    return extent;
}

double OccupancyGeometry::positionToX(std::int64_t position, std::int64_t extent, double width) {
    if (extent <= 0) {
        return 0.0;
    }
    return static_cast<double>(position) * width / static_cast<double>(extent);
}

std::int64_t OccupancyGeometry::xToPosition(double x, std::int64_t extent, double width) {
    if (extent <= 0 || width <= 0) {
        return 0;
    }
    const auto position = static_cast<std::int64_t>(std::floor(x * static_cast<double>(extent) / width));
    return std::clamp<std::int64_t>(position, 0, extent - 1);
}

} // namespace kvscope::gui
