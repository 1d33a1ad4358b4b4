// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gui/models/RetainedEventReader.h"
#include "kvscope/trace/Event.h"
#include "kvscope/trace/Timeline.h"

#include <cstdint>
#include <vector>

namespace kvscope::gui {

/// Every compression a session's cache press made, by step and layer, read from its Timeline once and
/// then as it grows: what the occupancy map asks at each paint without scanning the session.
class PressHistory {
public:
    struct Compression {
        std::int64_t step = 0;
        std::int32_t layer = 0;
        trace::CompressionEvent event;
    };

    /// Forgets everything (a new session).
    void reset();
    /// Reads the timeline's retained events added since the last call (a live run's new events).
    void update(const trace::Timeline& timeline);
    bool empty() const { return m_compressions.empty(); }
    /// Every compression, in step order.
    const std::vector<Compression>& compressions() const { return m_compressions; }
    /// The latest compression of `layer` at or before `step`; null when the press has not touched it yet.
    const Compression* latestAt(std::int32_t layer, std::int64_t step) const;

private:
    std::vector<Compression> m_compressions;
    RetainedEventReader m_reader;
};

} // namespace kvscope::gui
