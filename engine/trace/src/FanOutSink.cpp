// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/trace/FanOutSink.h"

#include <algorithm>

namespace kvscope::trace {

FanOutSink::FanOutSink(std::initializer_list<EventSink*> sinks) {
    for (EventSink* sink : sinks)
        addSink(sink);
}

void FanOutSink::emit(const Event& event) {
    for (EventSink* sink : m_sinks)
        sink->emit(event);
}

void FanOutSink::addSink(EventSink* sink) {
    if (sink != nullptr)
        m_sinks.push_back(sink);
}

bool FanOutSink::removeSink(EventSink* sink) {
    return std::erase(m_sinks, sink) > 0;
}

} // namespace kvscope::trace
