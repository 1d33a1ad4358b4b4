// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/trace/Event.h"
#include "kvscope/trace/EventSink.h"
#include "kvscope/trace/SessionMetadata.h"
#include "kvscope/trace/SessionWriter.h"
#include "kvscope/trace/Timeline.h"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <vector>

namespace kvscope::trace {

/// A session recorded to its file as it runs and read back through a file-backed Timeline, so that a live
/// session's memory is its index and a bounded number of decoded steps, however long it runs. Each step's
/// events go to a SessionWriter; once the writer has put the step's chunk on disk the timeline files its
/// location (Timeline::appendChunk) and keeps only the events views scan across the session.
///
/// `timeline` is replaced by a file-backed timeline of the file and must outlive the spill; it is read-only
/// meanwhile (only the spill adds to it). Events must arrive in step order, as the generator emits them.
class SessionSpill final : public EventSink {
public:
    /// Creates (or truncates) `path` and writes its header; SessionError if it cannot.
    SessionSpill(const std::filesystem::path& path, const SessionMetadata& metadata, Timeline& timeline,
                 std::size_t cachedSteps = Timeline::kDefaultCachedSteps);
    /// Finishes the file (what was written stays a readable session) without touching the timeline, which
    /// may be gone by then.
    ~SessionSpill() override;
    SessionSpill(const SessionSpill&) = delete;
    SessionSpill& operator=(const SessionSpill&) = delete;

    /// Writes the event; a step's events reach the timeline when its chunk is written (its StepEnd, the
    /// next step's first event, or flush()). SessionError when the file cannot be written.
    void emit(const Event& event) override;
    /// Writes the step in flight, so that the timeline holds every event emitted so far (after each batch
    /// of a live run).
    void flush();
    /// Adds the index footer: the file is then a finished session file. No event may follow.
    void finish();

    const std::filesystem::path& path() const { return m_writer.path(); }
    std::uint64_t bytesWritten() const { return m_writer.bytesWritten(); }

private:
    SessionWriter m_writer;
    Timeline& m_timeline;
    std::vector<Event> m_pending; ///< the step in flight's events, handed to the timeline with their chunk
    std::int64_t m_step = -1;     ///< the step m_pending is filed under
};

} // namespace kvscope::trace
