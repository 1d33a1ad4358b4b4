// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/geometry/OccupancyGeometry.h"

#include "kvscope/trace/LayerKind.h"

#include <algorithm>
#include <cmath>

namespace kvscope::gui {

std::vector<SlotSegment> OccupancyGeometry::segmentsOf(const trace::LayerState& layer) {
    std::vector<SlotSegment> segments;
    if (!layer.initialized) {
        return segments;
    }
    // A press's evictions leave gaps among the positions, not a slid-out prefix: count them as held
    // here, so that positions stay where the model sees them.
    const std::int64_t pressed =
        !trace::isSlidingWindow(layer.kind) ? std::max<std::int64_t>(layer.evictedTokens, 0) : std::int64_t{0};
    const std::int64_t seq = std::max<std::int64_t>(layer.seqLength, 0) + pressed;
    const std::int64_t stored = std::clamp<std::int64_t>(layer.storedTokens + pressed, 0, seq);
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
        const std::int64_t quantized = layer.quantizedTokens > 0 ? layer.quantizedTokens + pressed : 0;
        const std::int64_t quantizedEnd = heldBegin + std::clamp<std::int64_t>(quantized, 0, stored);
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

double OccupancyGeometry::positionToX(std::int64_t position, const PositionSpan& span, double width) {
    if (span.count <= 0) {
        return 0.0;
    }
    return static_cast<double>(position - span.first) * width / static_cast<double>(span.count);
}

std::int64_t OccupancyGeometry::xToPosition(double x, const PositionSpan& span, double width) {
    if (span.count <= 0 || width <= 0) {
        return span.first;
    }
    const auto offset = static_cast<std::int64_t>(std::floor(x * static_cast<double>(span.count) / width));
    return span.first + std::clamp<std::int64_t>(offset, 0, span.count - 1);
}

PositionSpan OccupancyGeometry::clamped(PositionSpan span, std::int64_t extent) {
    extent = std::max<std::int64_t>(extent, 1);
    span.count = std::clamp<std::int64_t>(span.count, 1, extent);
    span.first = std::clamp<std::int64_t>(span.first, 0, extent - span.count);
    return span;
}

PositionSpan OccupancyGeometry::zoomed(const PositionSpan& span, double factor, double x, double width,
                                       std::int64_t extent, std::int64_t minCount) {
    if (width <= 0 || !(factor > 0)) {
        return clamped(span, extent);
    }
    const std::int64_t anchor = xToPosition(x, span, width);
    std::int64_t count = std::llround(static_cast<double>(span.count) * factor);
    // Every zoom changes the span by at least one position, so that small spans do not get stuck.
    count = factor > 1 ? std::max(count, span.count + 1) : factor < 1 ? std::min(count, span.count - 1) : count;
    count = std::clamp<std::int64_t>(count, std::min(minCount, extent), std::max<std::int64_t>(extent, 1));
    // The first position that puts the anchor under x again (floor, as xToPosition counts).
    const auto first = anchor - static_cast<std::int64_t>(std::floor(x * static_cast<double>(count) / width));
    return clamped({first, count}, extent);
}

std::vector<ColumnLabel> OccupancyGeometry::columnLabels(const PositionSpan& span, double width, double labelWidth) {
    std::vector<ColumnLabel> labels;
    if (span.count <= 0 || width / static_cast<double>(span.count) < labelWidth) {
        return labels;
    }
    for (std::int64_t position = span.first; position < span.first + span.count; ++position) {
        labels.push_back({position, positionToX(position, span, width), positionToX(position + 1, span, width)});
    }
    return labels;
}

} // namespace kvscope::gui
