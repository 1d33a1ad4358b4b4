// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/models/PressHistory.h"

#include <algorithm>
#include <variant>

namespace kvscope::gui {

void PressHistory::reset() {
    m_compressions.clear();
    m_stepsRead = 0;
}

void PressHistory::update(const trace::Timeline& timeline) {
    const std::int64_t from = std::max<std::int64_t>(0, m_stepsRead - 1);
    std::erase_if(m_compressions,
                  [from](const Compression& compression) { return compression.step >= from; });
    for (std::int64_t step = from; step < timeline.stepCount(); ++step) {
        for (const trace::Event& event : timeline.eventsOfStep(step)) {
            if (const auto* compression = std::get_if<trace::CompressionEvent>(&event.payload);
                compression != nullptr && event.layer >= 0) {
                m_compressions.push_back({step, event.layer, *compression});
            }
        }
    }
    m_stepsRead = timeline.stepCount();
}

const PressHistory::Compression* PressHistory::latestAt(std::int32_t layer, std::int64_t step) const {
    // Compressions are in step order: the first one past `step` bounds the search.
    const auto end = std::upper_bound(
        m_compressions.begin(), m_compressions.end(), step,
        [](std::int64_t value, const Compression& compression) { return value < compression.step; });
    for (auto it = end; it != m_compressions.begin();) {
        --it;
        if (it->layer == layer) {
            return &*it;
        }
    }
    return nullptr;
}

} // namespace kvscope::gui
