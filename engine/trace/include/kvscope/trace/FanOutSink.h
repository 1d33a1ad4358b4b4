// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/trace/EventSink.h"

#include <cstddef>
#include <initializer_list>
#include <vector>

namespace kvscope::trace {

/// Forwards each event to several sinks (e.g. a SessionWriter and a Timeline), in the order added.
/// It does not own the sinks: they must outlive it or be removed first.
class FanOutSink final : public EventSink {
public:
    FanOutSink() = default;
    FanOutSink(std::initializer_list<EventSink*> sinks);

    void emit(const Event& event) override;

    /// Null sinks are ignored; adding a sink twice makes it receive every event twice.
    void addSink(EventSink* sink);
    /// Removes every occurrence of the sink; returns whether it was present.
    bool removeSink(EventSink* sink);
    std::size_t sinkCount() const { return m_sinks.size(); }

private:
    std::vector<EventSink*> m_sinks;
};

} // namespace kvscope::trace
