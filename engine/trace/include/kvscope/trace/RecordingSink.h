// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/trace/Event.h"
#include "kvscope/trace/EventSink.h"

#include <cstddef>
#include <vector>

namespace kvscope::trace {

/// Keeps a copy of every event it receives, in order; for tests, fixtures and small sessions.
class RecordingSink final : public EventSink {
public:
    void emit(const Event& event) override;

    const std::vector<Event>& events() const { return m_events; }
    std::size_t size() const { return m_events.size(); }
    /// Avoids regrowing (and re-copying) the event vector when the session size is known.
    void reserve(std::size_t events) { m_events.reserve(events); }
    void clear() { m_events.clear(); }
    /// Moves the recorded events out and leaves the sink empty, ready to record again.
    std::vector<Event> takeEvents();

private:
    std::vector<Event> m_events;
};

} // namespace kvscope::trace
