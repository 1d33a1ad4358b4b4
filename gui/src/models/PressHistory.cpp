// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/models/PressHistory.h"

#include <algorithm>
#include <span>
#include <variant>

namespace kvscope::gui {

void PressHistory::reset() {
    m_compressions.clear();
    m_eventsRead = 0;
    m_lastStep = 0;
}

void PressHistory::update(const trace::Timeline& timeline) {
    // The retained events hold every compression in both kinds of timeline: a file-backed session's
    // steps are not decoded for this.
    const std::span<const trace::Event> events = timeline.retainedEvents();
    if (events.size() < m_eventsRead) {
        reset(); // a new session in the same timeline
    }
    for (; m_eventsRead < events.size(); ++m_eventsRead) {
        const trace::Event& event = events[m_eventsRead];
        // Filed as the timeline files it: an event older than the newest step belongs to the newest step.
        m_lastStep = std::max(m_lastStep, event.step);
        if (const auto* compression = std::get_if<trace::CompressionEvent>(&event.payload);
            compression != nullptr && event.layer >= 0) {
            m_compressions.push_back({m_lastStep, event.layer, *compression});
        }
    }
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
