// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/trace/Event.h"

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

namespace kvscope::trace {

/// The events of one step, as Timeline::eventsOfStep hands them out: a view that keeps a decoded frame
/// of a file-backed timeline alive for as long as it is held (a frame cache may drop it meanwhile).
class StepEvents {
public:
    StepEvents() = default;
    explicit StepEvents(std::span<const Event> events) : m_events(events) {}
    explicit StepEvents(std::shared_ptr<const std::vector<Event>> frame)
        : m_frame(std::move(frame)),
          m_events(m_frame ? std::span<const Event>(*m_frame) : std::span<const Event>()) {}

    auto begin() const { return m_events.begin(); }
    auto end() const { return m_events.end(); }
    std::size_t size() const { return m_events.size(); }
    bool empty() const { return m_events.empty(); }
    const Event& operator[](std::size_t index) const { return m_events[index]; }
    /// Valid while this object lives.
    std::span<const Event> span() const { return m_events; }

private:
    std::shared_ptr<const std::vector<Event>> m_frame;
    std::span<const Event> m_events;
};

} // namespace kvscope::trace
