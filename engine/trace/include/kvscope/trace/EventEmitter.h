// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/trace/Event.h"
#include "kvscope/trace/EventSink.h"

#include <cstdint>
#include <utility>

namespace kvscope::trace {

/// Stamps events with the current step and a monotonic sequence number and hands them to a sink.
/// One emitter per session, shared by the generator (which advances the step) and the cache (which
/// emits). With no sink, emit() is one branch, and callers may test enabled() before computing
/// costly payload fields such as quantization errors. Not synchronised: use it from one thread.
class EventEmitter {
public:
    explicit EventEmitter(EventSink* sink = nullptr) : m_sink(sink) {}

    void setSink(EventSink* sink) { m_sink = sink; }
    EventSink* sink() const { return m_sink; }
    bool enabled() const { return m_sink != nullptr; }

    void setStep(std::int64_t step) { m_step = step; }
    std::int64_t step() const { return m_step; }
    /// The sequence number the next emitted event will carry.
    std::uint64_t nextSequence() const { return m_nextSequence; }

    /// layer = -1 for cache-wide or step-level events. Payload is any EventPayload alternative.
    template <typename Payload> void emit(std::int32_t layer, Payload&& payload) {
        if (m_sink == nullptr)
            return;
        m_sink->emit(Event{m_step, layer, m_nextSequence++, EventPayload(std::forward<Payload>(payload))});
    }

private:
    EventSink* m_sink = nullptr;
    std::int64_t m_step = 0;
    std::uint64_t m_nextSequence = 0;
};

} // namespace kvscope::trace
