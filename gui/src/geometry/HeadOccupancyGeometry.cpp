// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/geometry/HeadOccupancyGeometry.h"

#include "kvscope/trace/CompressionLayout.h"

#include <algorithm>

namespace kvscope::gui {

HeadDecision HeadOccupancyGeometry::decisionOf(const trace::CompressionEvent& event, std::int64_t step,
                                               std::int64_t coveredPositions) {
    HeadDecision decision;
    decision.step = step;
    // FORMAT.md: a press that masks instead of evicting leaves the cache's length as it was.
    decision.masking = event.lengthAfter == event.lengthBefore && event.prunedChannels.empty();
    const trace::CompressionLayout layout(event);
    const auto heads = static_cast<std::size_t>(layout.heads());
    if (layout.prunedChannelCount() > 0) {
        decision.prunedChannels.resize(heads);
        for (std::size_t head = 0; head < heads; ++head) {
            const auto channels = layout.prunedChannels(static_cast<std::int32_t>(head));
            decision.prunedChannels[head].assign(channels.begin(), channels.end());
        }
    }
    decision.keptRecorded = heads > 0 && event.keptRecorded > 0;
    decision.kept.resize(heads);
    decision.dropped.resize(heads);
    decision.keptCounts.resize(heads);
    std::int64_t largest = -1;
    for (std::size_t head = 0; head < heads; ++head) {
        const auto index = static_cast<std::int32_t>(head);
        decision.keptCounts[head] = layout.keptCount(index);
        const auto kept = layout.keptPositions(index);
        const auto dropped = layout.droppedPositions(index);
        const auto rotary = layout.rotaryPositions(index);
        if (!rotary.empty()) {
            // Sorted by kept position, each rotary position beside its own.
            std::vector<std::pair<std::int64_t, std::int64_t>> moves;
            for (std::size_t i = 0; i < kept.size(); ++i) {
                moves.emplace_back(kept[i], rotary[i]);
            }
            std::sort(moves.begin(), moves.end());
            decision.rotary.resize(heads);
            for (const auto& [from, to] : moves) {
                decision.rotary[head].push_back(to);
                largest = std::max(largest, to);
            }
        }
        decision.kept[head].assign(kept.begin(), kept.end());
        decision.dropped[head].assign(dropped.begin(), dropped.end());
        for (auto* list : {&decision.kept[head], &decision.dropped[head]}) {
            std::sort(list->begin(), list->end());
            if (!list->empty()) {
                largest = std::max(largest, list->back());
            }
        }
    }
    decision.coveredPositions = coveredPositions > 0 ? coveredPositions : largest + 1;
    return decision;
}

namespace {

/// The runs of a head's row of `positions` slots: inside the covered positions the ascending `listed` ones
/// take `listedSlot` and the rest `otherSlot`; from the covered end on, HeadSlot::Later.
std::vector<HeadRun> runsOver(const std::vector<std::int64_t>& listed, std::int64_t coveredPositions,
                              std::int64_t positions, HeadSlot listedSlot, HeadSlot otherSlot) {
    std::vector<HeadRun> runs;
    const auto add = [&](std::int64_t begin, std::int64_t end, HeadSlot slot) {
        end = std::min(end, positions);
        if (end <= begin) {
            return;
        }
        if (!runs.empty() && runs.back().slot == slot && runs.back().end == begin) {
            runs.back().end = end;
        } else {
            runs.push_back({begin, end, slot});
        }
    };
    const std::int64_t covered = std::min(coveredPositions, positions);
    std::int64_t next = 0;
    for (const std::int64_t position : listed) {
        if (position < next || position >= covered) {
            continue;
        }
        add(next, position, otherSlot);
        add(position, position + 1, listedSlot);
        next = position + 1;
    }
    add(next, covered, otherSlot);
    add(std::max<std::int64_t>(covered, 0), positions, HeadSlot::Later);
    return runs;
}

} // namespace

std::vector<HeadRun> HeadOccupancyGeometry::runsOf(const HeadDecision& decision, std::size_t head,
                                                   std::int64_t positions) {
    if (head >= decision.kept.size() || positions <= 0) {
        return {};
    }
    const HeadSlot lost = decision.masking ? HeadSlot::Masked : HeadSlot::Dropped;
    // Inside the covered positions, the listed ones take their slot, the rest the other.
    const bool byKept = decision.keptRecorded;
    return runsOver(byKept ? decision.kept[head] : decision.dropped[head], decision.coveredPositions, positions,
                    byKept ? HeadSlot::Kept : lost, byKept ? lost : HeadSlot::Kept);
}

std::vector<HeadRun> HeadOccupancyGeometry::rotatedRunsOf(const HeadDecision& decision, std::size_t head,
                                                          std::int64_t positions) {
    if (head >= decision.rotary.size() || positions <= 0) {
        return {};
    }
    std::vector<std::int64_t> occupied = decision.rotary[head];
    std::sort(occupied.begin(), occupied.end());
    return runsOver(occupied, decision.coveredPositions, positions, HeadSlot::Kept, HeadSlot::Vacant);
}

std::vector<RotaryLink> HeadOccupancyGeometry::linksOf(const HeadDecision& decision, std::size_t head,
                                                       std::size_t limit) {
    std::vector<RotaryLink> links;
    if (head >= decision.rotary.size() || head >= decision.kept.size()) {
        return links;
    }
    const std::vector<std::int64_t>& from = decision.kept[head];
    const std::vector<std::int64_t>& to = decision.rotary[head];
    const std::size_t count = std::min(from.size(), to.size());
    if (count == 0) {
        return links;
    }
    // Every k-th from the first, then the last: at most limit - 1 + 1 links.
    limit = std::max<std::size_t>(limit, 3);
    const std::size_t stride = count <= limit ? 1 : (count - 1 + limit - 3) / (limit - 2);
    for (std::size_t i = 0; i < count; i += stride) {
        links.push_back({from[i], to[i]});
    }
    if (links.back().from != from[count - 1]) {
        links.push_back({from[count - 1], to[count - 1]});
    }
    return links;
}

std::optional<std::int64_t> HeadOccupancyGeometry::rotatedFrom(const HeadDecision& decision, std::size_t head,
                                                               std::int64_t position) {
    if (head >= decision.rotary.size() || head >= decision.kept.size()) {
        return std::nullopt;
    }
    const std::vector<std::int64_t>& to = decision.rotary[head];
    for (std::size_t i = 0; i < to.size() && i < decision.kept[head].size(); ++i) {
        if (to[i] == position) {
            return decision.kept[head][i];
        }
    }
    return std::nullopt;
}

std::optional<std::int64_t> HeadOccupancyGeometry::rotatedTo(const HeadDecision& decision, std::size_t head,
                                                             std::int64_t position) {
    if (head >= decision.rotary.size() || head >= decision.kept.size()) {
        return std::nullopt;
    }
    const std::vector<std::int64_t>& from = decision.kept[head];
    const auto found = std::lower_bound(from.begin(), from.end(), position);
    if (found == from.end() || *found != position) {
        return std::nullopt;
    }
    const auto index = static_cast<std::size_t>(found - from.begin());
    return index < decision.rotary[head].size() ? std::optional(decision.rotary[head][index]) : std::nullopt;
}

} // namespace kvscope::gui
