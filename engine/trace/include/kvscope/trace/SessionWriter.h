// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/trace/Event.h"
#include "kvscope/trace/EventSink.h"
#include "kvscope/trace/SessionMetadata.h"
#include "kvscope/trace/StepChunkLocation.h"
#include "kvscope/trace/StepState.h"

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <vector>

struct ZSTD_CCtx_s;

namespace kvscope::trace {

class SessionOverview;

/// Writes a session file while the session runs (sessions/FORMAT.md): the header at once, then one
/// CRC-checked, zstd-compressed chunk per step, handed to the operating system as soon as the step
/// is complete, so a crash or SIGKILL loses at most the step in flight; finish() adds the index
/// footer. Events must arrive in step order (as the generator emits them).
class SessionWriter final : public EventSink {
public:
    /// Creates (or truncates) the file and writes the header; SessionError if it cannot.
    SessionWriter(const std::filesystem::path& path, const SessionMetadata& metadata);
    /// Finishes the file if finish() was not called; never throws.
    ~SessionWriter() override;
    SessionWriter(const SessionWriter&) = delete;
    SessionWriter& operator=(const SessionWriter&) = delete;

    /// Buffers the event in its step; the step's chunk is written when a later step begins or a
    /// StepEnd closes it. SessionError on a write failure, or when called after finish().
    void emit(const Event& event) override;
    /// Writes the buffered step now (e.g. before a long pause in a live session).
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
    /// of the file can read it back: SessionSpill). Set it before the first event.
    void setStepChunkListener(std::function<void(const StepChunkLocation&)> listener);

    const std::filesystem::path& path() const { return m_path; }
    /// Steps with at least one chunk on disk.
    std::int64_t stepsWritten() const { return m_stepsWritten; }
    std::uint64_t bytesWritten() const { return m_offset; }
    std::uint64_t eventsWritten() const { return m_eventsWritten; }

    /// Writes a whole recorded session atomically: to `path` + ".tmp", then renamed over `path`,
    /// so an existing file is never left half overwritten.
    static void save(const std::filesystem::path& path, const SessionMetadata& metadata,
                     std::span<const Event> events);
    /// The same for events `writeEvents` emits into the sink it is given, in order (a file-backed
    /// Timeline's replayInto: saved a step at a time).
    static void save(const std::filesystem::path& path, const SessionMetadata& metadata,
                     const std::function<void(EventSink&)>& writeEvents);

private:
    void writeSnapshot();
    void writeChunk(std::uint32_t type, std::span<const std::uint8_t> raw);
    /// The same for a payload made of `pieces`, one after another.
    void writeChunk(std::uint32_t type, std::initializer_list<std::span<const std::uint8_t>> pieces);
    void writeFrame(std::uint32_t type, std::uint16_t flags, std::span<const std::uint8_t> stored,
                    std::uint64_t rawSize);
    void writeBytes(const void* data, std::size_t size);

    std::filesystem::path m_path;
    std::FILE* m_file = nullptr;
    ZSTD_CCtx_s* m_compressor = nullptr; ///< reused for every chunk
    std::uint64_t m_offset = 0;
    /// The step in flight's chunk payload, its events encoded as they arrive (no event is kept); reused.
    std::vector<std::uint8_t> m_pending;
    std::uint32_t m_pendingEvents = 0;
    std::int64_t m_pendingStep = -1;        ///< the step m_pending belongs to
    std::vector<std::uint8_t> m_compressed; ///< writeChunk's buffer, reused
    std::int64_t m_lastFiledStep = -1;      ///< the newest step any event was filed under
    StepState m_state;                      ///< folded through StateReducer, for snapshots
    std::int64_t m_stepsSinceSnapshot = 0;
    std::vector<StepChunkLocation> m_stepChunks; ///< the index footer's two lists
    std::vector<StepChunkLocation> m_snapshots;
    /// What a file-backed Timeline keeps, built chunk by chunk and stored by finish() (format 1.6).
    std::unique_ptr<SessionOverview> m_overview;
    std::function<void(const StepChunkLocation&)> m_stepChunkListener;
    std::int64_t m_stepsWritten = 0;
    std::uint64_t m_eventsWritten = 0;
    bool m_finished = false;
};

} // namespace kvscope::trace
