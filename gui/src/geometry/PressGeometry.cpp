// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/geometry/PressGeometry.h"

#include "kvscope/trace/CompressionLayout.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace kvscope::gui {
namespace {

/// Appends [begin, end) in `state`, merging it into the last run when they touch with one state.
void append(std::vector<SlotSegment>& segments, std::int64_t begin, std::int64_t end, SlotState state) {
    if (end <= begin) {
        return;
    }
    if (!segments.empty() && segments.back().state == state && segments.back().end == begin) {
        segments.back().end = end;
        return;
    }
    segments.push_back({begin, end, state});
}

} // namespace

std::vector<SlotSegment> PressGeometry::droppedSegments(const trace::CompressionEvent& event) {
    const trace::CompressionLayout layout(event);
    std::vector<SlotSegment> segments;
    if (!layout.consistent()) {
        return segments;
    }
    const std::int32_t heads = layout.heads();
    std::vector<std::int64_t> kept;
    std::vector<std::int64_t> dropped;
    for (std::int32_t head = 0; head < heads; ++head) {
        const auto headKept = layout.keptPositions(head);
        const auto headDropped = layout.droppedPositions(head);
        kept.insert(kept.end(), headKept.begin(), headKept.end());
        dropped.insert(dropped.end(), headDropped.begin(), headDropped.end());
    }
    // Negative positions are damage: nothing to draw for them.
    std::erase_if(kept, [](std::int64_t position) { return position < 0; });
    std::erase_if(dropped, [](std::int64_t position) { return position < 0; });
    std::sort(kept.begin(), kept.end());
    std::sort(dropped.begin(), dropped.end());
    if (event.keptRecorded > 0) {
        // Every position below the largest one seen that no head kept is gone from the layer.
        const std::int64_t extent =
            std::max(kept.empty() ? 0 : kept.back() + 1, dropped.empty() ? 0 : dropped.back() + 1);
        std::int64_t cursor = 0;
        for (std::size_t index = 0; index < kept.size();) {
            const std::int64_t position = kept[index];
            std::size_t next = index;
            while (next < kept.size() && kept[next] == position) {
                ++next;
            }
            append(segments, cursor, position, SlotState::Dropped);
            if (static_cast<std::int64_t>(next - index) < heads) {
                append(segments, position, position + 1, SlotState::PartlyDropped);
            }
            cursor = position + 1;
            index = next;
        }
        append(segments, cursor, extent, SlotState::Dropped);
        return segments;
    }
    for (std::size_t index = 0; index < dropped.size();) {
        const std::int64_t position = dropped[index];
        std::size_t next = index;
        while (next < dropped.size() && dropped[next] == position) {
            ++next;
        }
        append(segments, position, position + 1,
               static_cast<std::int64_t>(next - index) >= heads ? SlotState::Dropped
                                                                : SlotState::PartlyDropped);
        index = next;
    }
    return segments;
}

std::vector<SlotSegment> PressGeometry::overlaid(const std::vector<SlotSegment>& base,
                                                 const std::vector<SlotSegment>& dropped) {
    std::vector<SlotSegment> result;
    std::size_t next = 0; // the first dropped run not yet placed
    for (const SlotSegment& segment : base) {
        std::int64_t cursor = segment.begin;
        while (cursor < segment.end) {
            while (next < dropped.size() && dropped[next].end <= cursor) {
                ++next;
            }
            if (next == dropped.size() || dropped[next].begin >= segment.end) {
                append(result, cursor, segment.end, segment.state);
                break;
            }
            const SlotSegment& over = dropped[next];
            append(result, cursor, std::max(cursor, over.begin), segment.state);
            const std::int64_t overEnd = std::min(over.end, segment.end);
            append(result, std::max(cursor, over.begin), overEnd, over.state);
            cursor = overEnd;
        }
    }
    return result;
}

std::optional<SlotState> PressGeometry::stateAt(const std::vector<SlotSegment>& segments,
                                                std::int64_t position) {
    const auto after = std::upper_bound(
        segments.begin(), segments.end(), position,
        [](std::int64_t value, const SlotSegment& segment) { return value < segment.begin; });
    if (after == segments.begin()) {
        return std::nullopt;
    }
    const SlotSegment& segment = *(after - 1);
    return position < segment.end ? std::optional(segment.state) : std::nullopt;
}

std::vector<PositionScore> PressGeometry::keptScores(const trace::CompressionEvent& event) {
    const trace::CompressionLayout layout(event);
    std::map<std::int64_t, std::pair<double, int>> sums;
    for (std::int32_t head = 0; head < layout.heads(); ++head) {
        const auto positions = layout.keptPositions(head);
        const auto scores = layout.keptScores(head);
        for (std::size_t index = 0; index < scores.size() && index < positions.size(); ++index) {
            auto& [sum, count] = sums[positions[index]];
            sum += scores[index];
            ++count;
        }
    }
    std::vector<PositionScore> result;
    result.reserve(sums.size());
    for (const auto& [position, sum] : sums) {
        result.push_back({position, sum.first / sum.second});
    }
    return result;
}

std::vector<double> PressGeometry::rankShades(const std::vector<PositionScore>& scores) {
    std::vector<double> shades(scores.size(), 0.5);
    std::vector<std::size_t> order;
    for (std::size_t index = 0; index < scores.size(); ++index) {
        if (std::isfinite(scores[index].score)) {
            order.push_back(index);
        }
    }
    if (order.size() < 2) {
        return shades;
    }
    std::sort(order.begin(), order.end(),
              [&](std::size_t a, std::size_t b) { return scores[a].score < scores[b].score; });
    const double last = static_cast<double>(order.size() - 1);
    for (std::size_t first = 0; first < order.size();) {
        std::size_t end = first;
        while (end < order.size() && scores[order[end]].score == scores[order[first]].score) {
            ++end;
        }
        const double rank = (static_cast<double>(first) + static_cast<double>(end - 1)) / 2.0;
        for (std::size_t index = first; index < end; ++index) {
            shades[order[index]] = rank / last;
        }
        first = end;
    }
    return shades;
}

} // namespace kvscope::gui
