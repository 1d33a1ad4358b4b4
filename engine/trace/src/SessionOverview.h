// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/trace/Event.h"
#include "kvscope/trace/SeriesColumns.h"
#include "kvscope/trace/StepState.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace kvscope::trace {

/// What a file-backed Timeline keeps of a session besides where its chunks lie (format 1.6's Overview
/// chunk, sessions/FORMAT.md): the keyframes, the charted columns, the retained events, the event count and
/// the state after the last step. SessionWriter builds it chunk by chunk as it writes them, folding exactly
/// as Timeline::openFile's pass does, and stores it at finish(); Timeline::openFile reads it instead of
/// decoding every frame. Sessions it cannot hold (a serving pool, whose state the snapshot layout does not
/// carry; token counts beyond i32) are not stored: their files open through the pass.
class SessionOverview {
public:
    explicit SessionOverview(std::int64_t keyframeInterval);

    /// One Step chunk of `step` (as written, before filing), in file order.
    void addChunk(std::int64_t step, std::span<const Event> events);
    /// Once every chunk is in: the last step's values join the columns.
    void finish();
    /// Whether encode() can hold the session (see the class comment).
    bool encodable() const;
    /// The Overview chunk's raw payload (sessions/FORMAT.md, "Overview payload").
    std::vector<std::uint8_t> encode() const;
    /// Reads a payload that encode() wrote; EventCodec::Invalid or ByteReader::Overrun on anything else.
    static SessionOverview decode(std::span<const std::uint8_t> raw);

    std::int64_t keyframeInterval() const { return m_keyframeInterval; }
    std::int64_t lastStep() const { return m_lastStep; }
    std::uint64_t eventCount() const { return m_eventCount; }
    /// keyframes()[j]: the state after step j * keyframeInterval(), for every such step before lastStep().
    std::vector<StepState>& keyframes() { return m_keyframes; }
    StepState& current() { return m_current; }
    SeriesColumns& columns() { return m_columns; }
    std::vector<Event>& retained() { return m_retained; }

private:
    void openStep(std::int64_t step);

    std::int64_t m_keyframeInterval;
    std::int64_t m_lastStep = -1;
    std::uint64_t m_eventCount = 0;
    std::vector<StepState> m_keyframes;
    StepState m_current;
    SeriesColumns m_columns;
    std::vector<Event> m_retained;
    std::size_t m_layers = 0; ///< the most layers any step had (the columns' width)
    bool m_paged = false;     ///< a paged event was seen: the snapshot layout cannot hold the state
};

} // namespace kvscope::trace
