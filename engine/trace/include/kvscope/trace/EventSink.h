// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

namespace kvscope::trace {

struct Event;

/// Receives every event of a session, in emission order, on the thread that emits it.
class EventSink {
public:
    virtual ~EventSink() = default;
    virtual void emit(const Event& event) = 0;

protected:
    EventSink() = default;
    EventSink(const EventSink&) = default;
    EventSink& operator=(const EventSink&) = default;
};

} // namespace kvscope::trace
