// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/trace/Event.h"
#include "kvscope/trace/SeriesColumns.h"
#include "kvscope/trace/SessionFormat.h"
#include "kvscope/trace/TimedSpans.h"
#include "kvscope/trace/StepState.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

namespace kvscope::trace {

class PayloadStream;

/// What a file-backed Timeline keeps of a session besides where its chunks lie (format 1.6's Overview
/// chunk, sessions/FORMAT.md): the keyframes, the charted columns, the retained events, the event count and
/// the state after the last step. SessionWriter builds it chunk by chunk as it writes them, folding exactly
/// as Timeline::openFile's pass does, and stores it at finish(); Timeline::openFile reads it instead of
/// decoding every frame. Sessions it cannot hold (a serving pool, whose state the snapshot layout does not
/// carry; token counts beyond i32) are not stored: their files open through the pass.
class SessionOverview {
public:
    /// `columnBlockSteps` > 0: the writer takes the columns off in blocks of that many steps
    /// (takeColumnBlock), so that it holds at most one block of them (format 1.7).
    explicit SessionOverview(std::int64_t keyframeInterval, std::int64_t columnBlockSteps = 0);

    /// A Step chunk of `step` (as written, before filing), in file order: beginChunk(step), then add() for each
    /// of the chunk's events (the writer folds each event as it arrives and keeps none of them).
    void beginChunk(std::int64_t step);
    void add(const Event& event);
    /// Once every chunk is in: the last step's values join the columns.
    void finish();
    /// A Columns chunk's raw payload (1.7) once a block of columnBlockSteps steps is complete; the overview
    /// then lets go of those rows. nullopt while the block is filling.
    std::optional<std::vector<std::uint8_t>> takeColumnBlock();
    /// A Spans chunk's raw payload (1.9): the transfers and compute spans added since the last block, once there
    /// are at least `minimum` of them (SessionFormat::kSpanBlockSpans while the run goes, 1 at its end); the
    /// overview keeps none of them. nullopt while fewer wait.
    std::optional<std::vector<std::uint8_t>> takeSpanBlock(std::size_t minimum);
    /// Whether encode() can hold the session (see the class comment).
    bool encodable() const;
    /// The Overview chunk's raw payload (sessions/FORMAT.md, "Overview payload"; its columns are the rows
    /// after the last block taken) in three parts, so that the writer need not put it together: `head`,
    /// then encodedKeyframes(), then `tail`.
    void encode(std::vector<std::uint8_t>& head, std::vector<std::uint8_t>& tail) const;
    std::span<const std::uint8_t> encodedKeyframes() const { return m_keyframeBytes; }
    /// The payload of the file's `index`-th Columns chunk, in file order.
    using ColumnBlockReader = std::function<std::vector<std::uint8_t>(std::size_t index)>;
    /// Reads a payload that encode() wrote from a stream (a file's compressed overview, decompressed as it is
    /// decoded), after the `blocks` Columns chunks before it (read one at a time through `block`). `minor`: the
    /// file's format minor (from 1.9 the payload ends with the count of spans its Spans chunks hold,
    /// spanBlockSpans()). EventCodec::Invalid, ByteReader::Overrun or ChunkFrame::Invalid on anything else.
    static SessionOverview decode(PayloadStream& raw, std::size_t blocks, const ColumnBlockReader& block,
                                  std::uint16_t minor);

    std::int64_t keyframeInterval() const { return m_keyframeInterval; }
    std::int64_t lastStep() const { return m_lastStep; }
    std::uint64_t eventCount() const { return m_eventCount; }
    /// keyframes()[j]: the state after step j * keyframeInterval(), for every such step before lastStep() (as
    /// decoded; a writer keeps its own encoded).
    std::vector<StepState>& keyframes() { return m_keyframes; }
    StepState& current() { return m_current; }
    SeriesColumns& columns() { return m_columns; }
    /// The retained events but transfers and compute spans, which are in spans() (from 1.9, once the file's
    /// Spans chunks are read into it: a decoded overview holds only those its retained events had).
    std::vector<Event>& retained() { return m_retained; }
    TimedSpans& spans() { return m_spans; }
    /// The spans the file's Spans chunks hold (1.9; 0 before).
    std::uint64_t spanBlockSpans() const { return m_spansTaken; }

private:
    void openStep(std::int64_t step);
    void keepKeyframe();

    std::int64_t m_keyframeInterval;
    std::int64_t m_lastStep = -1;
    std::uint64_t m_eventCount = 0;
    std::vector<StepState> m_keyframes;
    /// A writer's keyframes (columnBlockSteps > 0), encoded as they come: only encode() reads them.
    std::vector<std::uint8_t> m_keyframeBytes;
    std::size_t m_encodedKeyframes = 0;
    StepState m_current;
    SeriesColumns m_columns;
    std::int64_t m_columnBlockSteps = 0;
    std::int64_t m_columnsFirst = 0; ///< the step of m_columns' first row (the rows before are in blocks)
    bool m_columnsInexact = false;   ///< a block taken off did not fit i32: the overview cannot be stored
    /// A decoded overview's retained events; its transfers and compute spans are in m_spans.
    std::vector<Event> m_retained;
    TimedSpans m_spans;
    /// A writer's retained events (add), encoded as they come: only encode() reads them.
    std::vector<std::uint8_t> m_retainedBytes;
    std::size_t m_encodedRetained = 0;
    /// A writer's transfers and compute spans since its last Spans block, and how many it took off in blocks.
    TimedSpans m_pendingSpans;
    std::uint64_t m_spansTaken = 0;
    std::size_t m_layers = 0; ///< the most layers any step had (the columns' width)
    bool m_paged = false;     ///< a paged or server event was seen: the snapshot layout cannot hold the state
};

} // namespace kvscope::trace
