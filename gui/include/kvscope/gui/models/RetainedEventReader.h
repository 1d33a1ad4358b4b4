// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/trace/Event.h"
#include "kvscope/trace/Timeline.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

namespace kvscope::gui {

/// Reads a timeline's retained events a few at a time, as a live session grows, filing each at the step the
/// timeline files it: the histories of the views (presses, speculation, channel errors) share it.
class RetainedEventReader {
public:
    void reset() {
        m_eventsRead = 0;
        m_lastStep = 0;
    }

    /// Calls visit(event, step) for each retained event not read yet. The retained events hold every event in
    /// both kinds of timeline (a file-backed session's steps are not decoded for this). When the timeline holds
    /// fewer events than were read, a new session began in it: restart() is called, then every event is read.
    template <typename Restart, typename Visit>
    void read(const trace::Timeline& timeline, Restart&& restart, Visit&& visit) {
        const std::span<const trace::Event> events = timeline.retainedEvents();
        if (events.size() < m_eventsRead) {
            reset();
            restart();
        }
        for (; m_eventsRead < events.size(); ++m_eventsRead) {
            const trace::Event& event = events[m_eventsRead];
            // An event older than the newest step belongs to the newest step.
            m_lastStep = std::max(m_lastStep, event.step);
            visit(event, m_lastStep);
        }
    }

private:
    std::size_t m_eventsRead = 0;
    std::int64_t m_lastStep = 0;
};

} // namespace kvscope::gui
