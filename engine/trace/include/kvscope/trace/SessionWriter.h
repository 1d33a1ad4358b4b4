// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/trace/ChunkWriting.h"
#include "kvscope/trace/Event.h"
#include "kvscope/trace/EventSink.h"
#include "kvscope/trace/SessionMetadata.h"
#include "kvscope/trace/StepChunkLocation.h"
#include "kvscope/trace/StepState.h"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <vector>

namespace kvscope::trace {

class ChunkAppender;
class SessionOverview;

/// Writes a session file while the session runs (sessions/FORMAT.md): the header at once, then one
/// CRC-checked, zstd-compressed chunk per step, handed to the operating system once the step is complete
/// (ChunkWriting::Background: by the writer's thread, within a few milliseconds; CallersThread: before emit()
/// returns), so a crash or SIGKILL loses at most the step in flight and the steps of the last few
/// milliseconds; finish() adds the index footer. Events must arrive in step order (as the generator emits
/// them), from one thread.
class SessionWriter final : public EventSink {
public:
    /// Creates (or truncates) the file and writes the header; SessionError if it cannot.
    SessionWriter(const std::filesystem::path& path, const SessionMetadata& metadata,
                  ChunkWriting writing = ChunkWriting::Background);
    /// Finishes the file if finish() was not called; never throws.
    ~SessionWriter() override;
    SessionWriter(const SessionWriter&) = delete;
    SessionWriter& operator=(const SessionWriter&) = delete;

    /// Buffers the event in its step; the step's chunk is written when a later step begins or a
    /// StepEnd closes it. SessionError on a write failure (in the background: the next call after it), or
    /// when called after finish().
    void emit(const Event& event) override;
    /// Writes the buffered step now and waits until every chunk is with the operating system (e.g. before a
    /// long pause in a live session); SessionError on a write failure.
    void flushStep();
    /// Writes the pending step and the index footer and closes the file.
    void finish();

    /// Steps of chart columns per Columns chunk (SessionFormat::kColumnBlockSteps; 0: all in the overview,
    /// as 1.6 wrote them). Tests set a small one; call it before the first event.
    void setColumnBlockSteps(std::int64_t steps);

    /// Writes no overview (no column blocks, no summary before the index): for a file whose one reader builds
    /// its own as it follows the file (SessionSpill's timeline), so that the work and memory are not spent
    /// twice. Such a file opens by reading every step, as files older than format 1.6 do. Call it before the
    /// first event.
    void skipOverview();

    /// Called with each step chunk's location once the chunk is handed to the operating system (so a reader
    /// of the file can read it back: SessionSpill). Set it before the first event, on a writer whose chunks
    /// are written on the caller's thread (std::logic_error otherwise).
    void setStepChunkListener(std::function<void(const StepChunkLocation&)> listener);

    const std::filesystem::path& path() const { return m_path; }
    /// Steps with at least one chunk handed to the operating system.
    std::int64_t stepsWritten() const;
    std::uint64_t bytesWritten() const;
    std::uint64_t eventsWritten() const;

    /// Writes a whole recorded session atomically: to `path` + ".tmp", then renamed over `path`,
    /// so an existing file is never left half overwritten.
    static void save(const std::filesystem::path& path, const SessionMetadata& metadata,
                     std::span<const Event> events);
    /// The same for events `writeEvents` emits into the sink it is given, in order (a file-backed
    /// Timeline's replayInto: saved a step at a time).
    static void save(const std::filesystem::path& path, const SessionMetadata& metadata,
                     const std::function<void(EventSink&)>& writeEvents);

private:
    /// Hands the buffered step's chunk to the appender (the background thread writes it in its time).
    void handOverStep();
    void writeSnapshot();

    std::filesystem::path m_path;
    std::unique_ptr<ChunkAppender> m_appender;
    ChunkWriting m_writing;
    /// The step in flight's chunk payload, its events encoded as they arrive (no event is kept).
    std::vector<std::uint8_t> m_pending;
    std::uint32_t m_pendingEvents = 0;
    std::int64_t m_pendingStep = -1;   ///< the step m_pending belongs to
    std::int64_t m_lastFiledStep = -1; ///< the newest step any event was filed under
    StepState m_state;                 ///< folded through StateReducer, for snapshots
    std::int64_t m_stepsSinceSnapshot = 0;
    /// What a file-backed Timeline keeps, built chunk by chunk and stored by finish() (format 1.6).
    std::unique_ptr<SessionOverview> m_overview;
    std::function<void(const StepChunkLocation&)> m_stepChunkListener;
    bool m_finished = false;
};

} // namespace kvscope::trace
