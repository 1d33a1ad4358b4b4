// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/geometry/HeadOccupancyGeometry.h"

#include <algorithm>

namespace kvscope::gui {

HeadDecision HeadOccupancyGeometry::decisionOf(const trace::CompressionEvent& event, std::int64_t step,
                                               std::int64_t coveredPositions) {
    HeadDecision decision;
    decision.step = step;
    decision.masking = event.lengthAfter == event.lengthBefore;
    const auto heads = static_cast<std::size_t>(std::max(event.heads, 0));
    decision.kept.resize(heads);
    decision.keptCounts.assign(heads, event.lengthAfter);
    decision.dropped.resize(heads);
    const auto& positions = event.positions;
    const auto recorded = static_cast<std::size_t>(std::clamp<std::int64_t>(event.keptRecorded, 0, positions.size()));
    decision.keptRecorded = heads > 0 && recorded > 0;
    // Every head kept lengthAfter positions, recorded head after head, then each head's dropped ones.
    const std::size_t perHeadKept = heads > 0 ? recorded / heads : 0;
    const std::size_t droppedTotal = positions.size() - recorded;
    const std::size_t perHeadDropped = heads > 0 ? droppedTotal / heads : 0;
    std::int64_t largest = -1;
    for (std::size_t head = 0; head < heads; ++head) {
        auto keptBegin = positions.begin() + static_cast<std::ptrdiff_t>(head * perHeadKept);
        decision.kept[head].assign(keptBegin, keptBegin + static_cast<std::ptrdiff_t>(perHeadKept));
        if (decision.keptRecorded) {
            decision.keptCounts[head] = static_cast<std::int64_t>(perHeadKept);
        }
        auto droppedBegin = positions.begin() + static_cast<std::ptrdiff_t>(recorded + head * perHeadDropped);
        decision.dropped[head].assign(droppedBegin, droppedBegin + static_cast<std::ptrdiff_t>(perHeadDropped));
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

std::vector<HeadRun> HeadOccupancyGeometry::runsOf(const HeadDecision& decision, std::size_t head,
                                                   std::int64_t positions) {
    std::vector<HeadRun> runs;
    if (head >= decision.kept.size() || positions <= 0) {
        return runs;
    }
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
    const HeadSlot lost = decision.masking ? HeadSlot::Masked : HeadSlot::Dropped;
    // Inside the covered positions, the listed ones take `listed`, the rest `other`.
    const bool byKept = decision.keptRecorded;
    const std::vector<std::int64_t>& listed = byKept ? decision.kept[head] : decision.dropped[head];
    const HeadSlot listedSlot = byKept ? HeadSlot::Kept : lost;
    const HeadSlot otherSlot = byKept ? lost : HeadSlot::Kept;
    const std::int64_t covered = std::min(decision.coveredPositions, positions);
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

} // namespace kvscope::gui
