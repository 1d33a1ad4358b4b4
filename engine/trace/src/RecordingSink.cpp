// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/trace/RecordingSink.h"

#include <utility>

namespace kvscope::trace {

void RecordingSink::emit(const Event& event) {
    m_events.push_back(event);
}

std::vector<Event> RecordingSink::takeEvents() {
    std::vector<Event> events = std::move(m_events);
    m_events.clear();
    return events;
}

} // namespace kvscope::trace
