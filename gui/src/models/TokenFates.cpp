// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/models/TokenFates.h"

#include "kvscope/gui/geometry/HeadOccupancyGeometry.h"
#include "kvscope/gui/geometry/PressGeometry.h"

#include <algorithm>

namespace kvscope::gui {
namespace {

/// Fates from the most severe down: a summary shows the first any layer has.
constexpr TokenFate kBySeverity[] = {TokenFate::Dropped, TokenFate::PartlyDropped, TokenFate::SlidOut, TokenFate::Masked,
                                     TokenFate::Offloaded, TokenFate::Quantized, TokenFate::Kept};

} // namespace

std::int32_t TokenFateCounts::seen() const {
    std::int32_t total = 0;
    for (int fate = 0; fate < kTokenFateCount; ++fate) {
        total += static_cast<TokenFate>(fate) == TokenFate::Absent ? 0 : layers[static_cast<std::size_t>(fate)];
    }
    return total;
}

TokenFate TokenFateCounts::shown() const {
    for (const TokenFate fate : kBySeverity) {
        if (of(fate) > 0) {
            return fate;
        }
    }
    return TokenFate::Absent;
}

TokenFate LayerHoldings::fateAt(std::int64_t position) const {
    const std::optional<SlotState> slot = PressGeometry::stateAt(segments, position);
    if (!slot || *slot == SlotState::Reserved) {
        return TokenFate::Absent;
    }
    switch (*slot) {
    case SlotState::SlidOut:
        return TokenFate::SlidOut;
    case SlotState::Dropped:
        return maskingPress ? TokenFate::Masked : TokenFate::Dropped;
    case SlotState::PartlyDropped:
        return maskingPress ? TokenFate::Masked : TokenFate::PartlyDropped;
    default:
        break;
    }
    // Held: hidden from the newest query where its mask excludes the key (a chunk boundary, a window).
    const std::int64_t column = position - mask.kvOffset;
    if (mask.queryLength > 0 && column >= 0 && column < mask.kvLength &&
        !MaskGeometry::allowed(mask, mask.queryLength - 1, column)) {
        return TokenFate::Masked;
    }
    return *slot == SlotState::Quantized ? TokenFate::Quantized
           : *slot == SlotState::Offloaded ? TokenFate::Offloaded
                                           : TokenFate::Kept;
}

void TokenFates::reset() {
    m_press.reset();
    m_dropped.clear();
    m_layers.clear();
    m_step = 0;
}

void TokenFates::update(const trace::Timeline& timeline) {
    const std::size_t before = m_press.compressions().size();
    m_press.update(timeline);
    if (m_press.compressions().size() != before) {
        m_dropped.clear();
    }
}

LayerHoldings TokenFates::holdingsOf(const trace::StepState& state, std::size_t layer) const {
    LayerHoldings holdings;
    const trace::LayerState& layerState = state.layers[layer];
    holdings.segments = OccupancyGeometry::segmentsOf(layerState);
    holdings.mask = MaskGeometry::shapeFor(layerState, layer < m_chunkSizes.size() ? m_chunkSizes[layer] : 0);
    if (const PressHistory::Compression* latest = m_press.latestAt(static_cast<std::int32_t>(layer), state.step)) {
        auto found = m_dropped.find(latest);
        if (found == m_dropped.end()) {
            found = m_dropped.emplace(latest, PressGeometry::droppedSegments(latest->event)).first;
        }
        holdings.segments = PressGeometry::overlaid(holdings.segments, found->second);
        holdings.maskingPress = latest->event.lengthAfter == latest->event.lengthBefore;
        if (!holdings.maskingPress) {
            // The press compacted the layer's slots: the mask's columns no longer name positions.
            holdings.mask = {};
        }
    }
    return holdings;
}

void TokenFates::setState(const trace::StepState& state, const std::vector<std::int64_t>& chunkSizes) {
    m_chunkSizes = chunkSizes;
    m_step = state.step;
    m_layers.clear();
    for (std::size_t layer = 0; layer < state.layers.size(); ++layer) {
        m_layers.push_back(holdingsOf(state, layer));
    }
}

TokenFate TokenFates::fateAt(int layer, std::int64_t position) const {
    if (layer < 0 || layer >= layerCount()) {
        return TokenFate::Absent;
    }
    return m_layers[static_cast<std::size_t>(layer)].fateAt(position);
}

TokenFateCounts TokenFates::countsAt(std::int64_t position) const {
    TokenFateCounts counts;
    for (const LayerHoldings& layer : m_layers) {
        ++counts.layers[static_cast<std::size_t>(layer.fateAt(position))];
    }
    return counts;
}

std::pair<int, int> TokenFates::headsDropping(int layer, std::int64_t position) const {
    const PressHistory::Compression* latest = m_press.latestAt(layer, m_step);
    if (latest == nullptr || position < 0) {
        return {0, 0};
    }
    const HeadDecision decision = HeadOccupancyGeometry::decisionOf(latest->event, latest->step, 0);
    int dropping = 0;
    for (std::size_t head = 0; head < decision.keptCounts.size(); ++head) {
        const std::vector<HeadRun> runs = HeadOccupancyGeometry::runsOf(decision, head, position + 1);
        dropping += !runs.empty() && (runs.back().slot == HeadSlot::Dropped || runs.back().slot == HeadSlot::Masked);
    }
    return {dropping, static_cast<int>(decision.keptCounts.size())};
}

std::optional<std::int64_t> TokenFates::since(const trace::Timeline& timeline, std::int64_t step, int layer,
                                              std::int64_t position, TokenFate fate) const {
    if (step < 0 || step >= timeline.stepCount()) {
        return std::nullopt;
    }
    const auto holdsAt = [&](std::int64_t at) {
        const trace::StepState state = timeline.stateAt(at);
        const std::size_t layers = state.layers.size();
        for (std::size_t index = layer < 0 ? 0 : static_cast<std::size_t>(layer);
             index < (layer < 0 ? layers : std::min(layers, static_cast<std::size_t>(layer) + 1)); ++index) {
            if (holdingsOf(state, index).fateAt(position) == fate) {
                return true;
            }
        }
        return false;
    };
    if (!holdsAt(step)) {
        return std::nullopt;
    }
    // The first step of [low, step] at which it holds, it holding at `step`.
    std::int64_t low = 0;
    std::int64_t high = step;
    while (low < high) {
        const std::int64_t middle = low + (high - low) / 2;
        if (holdsAt(middle)) {
            high = middle;
        } else {
            low = middle + 1;
        }
    }
    return low;
}

} // namespace kvscope::gui
