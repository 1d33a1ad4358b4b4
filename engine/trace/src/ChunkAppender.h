// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/trace/SessionFormat.h"
#include "kvscope/trace/StepChunkLocation.h"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <initializer_list>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

struct ZSTD_CCtx_s;

namespace kvscope::trace {

/// Appends a session file's chunks (sessions/FORMAT.md: a 24-byte header, the payload zstd-compressed where
/// that makes it smaller, a CRC-32C) in the order they are handed over, and lists where the step and snapshot
/// chunks lie. Once startBackground() is called, it compresses and writes on a thread of its own.
class ChunkAppender {
public:
    /// A chunk handed over: its type, its payload and, for the index, its step and (Step chunks) event count.
    struct Chunk {
        SessionFormat::ChunkType type = SessionFormat::ChunkType::Step;
        std::int64_t step = 0;
        std::uint32_t events = 0;
        std::vector<std::uint8_t> payload;
    };
    /// What is on the operating system's side so far.
    struct Progress {
        std::uint64_t bytes = 0;
        std::int64_t steps = 0; ///< steps with at least one chunk
        std::uint64_t events = 0;
    };

    /// How often the background thread takes the chunks handed over. It is not woken per chunk: on a two-core
    /// machine, waking a sleeping core at every step of a small model cost that step more than the writing
    /// the thread took off it.
    static constexpr std::chrono::milliseconds kPollInterval{2};
    /// Chunks waiting for the background thread, in payload bytes, past which it is woken at once ...
    static constexpr std::size_t kWakeBytes = std::size_t{1} << 20;
    /// ... and past which append() waits for it (a producer faster than zstd holds at most this much).
    static constexpr std::size_t kMaxQueuedBytes = std::size_t{8} << 20;
    /// Step payload buffers kept for spareBuffer().
    static constexpr std::size_t kSpareBuffers = 64;

    /// Creates (or truncates) the file; SessionError if it cannot. Chunks are written on the caller's thread.
    explicit ChunkAppender(const std::filesystem::path& path);
    /// Stops the thread, writing what it was handed, and closes the file; never throws.
    ~ChunkAppender();
    ChunkAppender(const ChunkAppender&) = delete;
    ChunkAppender& operator=(const ChunkAppender&) = delete;

    /// From now on, chunks are compressed and written by a thread of the appender's own.
    void startBackground();
    /// Writes `bytes` as they are (the file's header and footer), flushed. Not while a background thread
    /// runs.
    void writeBytes(std::span<const std::uint8_t> bytes);
    /// Writes the chunk (flushed, if a Step chunk), or hands it to the background thread. SessionError if
    /// this or an earlier background write failed.
    void append(Chunk chunk);
    /// The same for a payload made of `pieces`, one zstd frame streamed from them, so that a large payload
    /// (the overview: tens of MB) is never put together. Not while a background thread runs.
    void append(SessionFormat::ChunkType type, std::initializer_list<std::span<const std::uint8_t>> pieces);
    /// An empty payload buffer with room, from the chunks already written, for the next chunk.
    std::vector<std::uint8_t> spareBuffer();
    /// Waits until every chunk handed over is with the operating system; SessionError if a write failed.
    void drain();
    /// drain(), then ends the background thread: later chunks are written on the caller's thread.
    void stop();
    /// Closes the file; SessionError if closing fails. stop() first.
    void close();

    Progress progress() const;
    /// Where each step and snapshot chunk lies, in file order. Not while a background thread runs.
    const std::vector<StepChunkLocation>& stepChunks() const { return m_stepChunks; }
    const std::vector<StepChunkLocation>& snapshots() const { return m_snapshots; }

private:
    void run();
    /// Compresses and writes one chunk, and files its location; on the thread that writes.
    void write(const Chunk& chunk);
    void writeFrame(SessionFormat::ChunkType type, std::uint16_t flags, std::span<const std::uint8_t> stored,
                    std::uint64_t rawSize);
    void put(const void* data, std::size_t size);
    /// Makes the bytes put so far what progress() reports.
    void publishOffset();
    void recycle(Chunk chunk);
    void recycleLocked(Chunk chunk); ///< with m_mutex held
    void flush();
    void throwIfFailed() const;

    std::filesystem::path m_path;
    std::FILE* m_file = nullptr;
    ZSTD_CCtx_s* m_compressor = nullptr; ///< reused for every chunk
    std::uint64_t m_offset = 0;          ///< bytes put into the file; the writing thread's
    std::vector<std::uint8_t> m_compressed;
    std::vector<StepChunkLocation> m_stepChunks;
    std::vector<StepChunkLocation> m_snapshots;

    /// Guards everything below, which the background thread and the caller share.
    mutable std::mutex m_mutex;
    std::condition_variable m_wake;    ///< the thread: chunks to write now, or stop
    std::condition_variable m_written; ///< the caller: the queue was taken and written
    std::vector<Chunk> m_queue;
    std::size_t m_queuedBytes = 0;
    bool m_writing = false; ///< the thread holds chunks taken from the queue
    bool m_wakeNow = false;
    bool m_stopping = false;
    std::string m_failure; ///< a background write's error, thrown to the caller
    std::vector<std::vector<std::uint8_t>> m_spare;
    Progress m_progress;
    std::thread m_thread;
};

} // namespace kvscope::trace
