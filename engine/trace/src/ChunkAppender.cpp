// SPDX-License-Identifier: GPL-3.0-or-later
#include "ChunkAppender.h"

#include "Crc32c.h"
#include "kvscope/trace/SessionError.h"

#include <array>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>
#include <zstd.h>

namespace kvscope::trace {

namespace {

// Level 3 compresses a 32-layer step (~8 KiB of events) ~5x in ~30 µs; higher levels cost more
// time per step than they save on disk.
constexpr int kZstdLevel = 3;

std::string describeErrno() {
    return std::strerror(errno);
}

SessionError writeError(const std::filesystem::path& path, const std::string& reason) {
    return SessionError("cannot write session file " + path.string() + ": " + reason);
}

} // namespace

ChunkAppender::ChunkAppender(const std::filesystem::path& path) : m_path(path) {
    // One context for the whole file, its parameters set once: creating or configuring one per chunk costs
    // more than compressing the chunk.
    m_compressor = ZSTD_createCCtx();
    if (m_compressor != nullptr) {
        ZSTD_CCtx_setParameter(m_compressor, ZSTD_c_compressionLevel, kZstdLevel);
    }
    m_file = std::fopen(path.c_str(), "wb");
    if (m_file == nullptr) {
        ZSTD_freeCCtx(m_compressor);
        throw SessionError("cannot create session file " + path.string() + ": " + describeErrno());
    }
}

void ChunkAppender::startBackground() {
    if (m_thread.joinable()) {
        return;
    }
    m_stopping = false;
    try {
        m_thread = std::thread([this] { run(); });
    } catch (const std::system_error&) {
        // No thread to be had (a process limit): the chunks are written on the caller's thread instead.
    }
}

ChunkAppender::~ChunkAppender() {
    try {
        stop();
    } catch (...) {
        // A destructor cannot report; what was written before stays readable.
    }
    if (m_file != nullptr) {
        std::fclose(m_file);
    }
    ZSTD_freeCCtx(m_compressor);
}

void ChunkAppender::writeBytes(std::span<const std::uint8_t> bytes) {
    if (m_thread.joinable()) {
        throw std::logic_error("ChunkAppender::writeBytes while the background thread writes");
    }
    put(bytes.data(), bytes.size());
    flush();
    publishOffset();
}

void ChunkAppender::append(Chunk chunk) {
    if (!m_thread.joinable()) {
        write(chunk);
        if (chunk.type == SessionFormat::ChunkType::Step) {
            flush();
        }
        recycle(std::move(chunk));
        return;
    }
    std::unique_lock lock(m_mutex);
    throwIfFailed();
    if (m_queuedBytes >= kMaxQueuedBytes) {
        m_wakeNow = true;
        m_wake.notify_one();
        m_written.wait(lock, [this] { return m_queuedBytes < kMaxQueuedBytes || !m_failure.empty(); });
        throwIfFailed();
    }
    m_queuedBytes += chunk.payload.size();
    m_queue.push_back(std::move(chunk));
    if (m_queuedBytes >= kWakeBytes && !m_wakeNow) {
        m_wakeNow = true;
        m_wake.notify_one();
    }
}

void ChunkAppender::append(SessionFormat::ChunkType type,
                           std::initializer_list<std::span<const std::uint8_t>> pieces) {
    if (m_thread.joinable()) {
        throw std::logic_error("ChunkAppender::append(pieces) while the background thread writes");
    }
    std::size_t rawSize = 0;
    for (const auto& piece : pieces) {
        rawSize += piece.size();
    }
    std::vector<std::uint8_t> compressed;
    bool streamed = m_compressor != nullptr &&
                    !ZSTD_isError(ZSTD_CCtx_reset(m_compressor, ZSTD_reset_session_only)) &&
                    !ZSTD_isError(ZSTD_CCtx_setPledgedSrcSize(m_compressor, rawSize));
    std::size_t index = 0;
    for (auto piece = pieces.begin(); streamed && piece != pieces.end(); ++piece, ++index) {
        ZSTD_inBuffer in{piece->data(), piece->size(), 0};
        const ZSTD_EndDirective mode = index + 1 == pieces.size() ? ZSTD_e_end : ZSTD_e_continue;
        while (true) {
            const std::size_t at = compressed.size();
            compressed.resize(at + ZSTD_CStreamOutSize());
            ZSTD_outBuffer out{compressed.data() + at, ZSTD_CStreamOutSize(), 0};
            const std::size_t left = ZSTD_compressStream2(m_compressor, &out, &in, mode);
            compressed.resize(at + out.pos);
            if (ZSTD_isError(left)) {
                streamed = false;
                break;
            }
            if (mode == ZSTD_e_end ? left == 0 : in.pos == in.size) {
                break;
            }
        }
    }
    if (streamed && pieces.size() > 0 && compressed.size() < rawSize) {
        writeFrame(type, SessionFormat::Zstd, compressed, rawSize);
        flush();
        publishOffset();
        return;
    }
    // Incompressible, or no context: as one payload, stored as write() stores it.
    Chunk whole{type, 0, 0, {}};
    whole.payload.reserve(rawSize);
    for (const auto& piece : pieces) {
        whole.payload.insert(whole.payload.end(), piece.begin(), piece.end());
    }
    if (m_compressor != nullptr) {
        ZSTD_CCtx_reset(m_compressor, ZSTD_reset_session_only);
    }
    write(whole);
    flush();
}

std::vector<std::uint8_t> ChunkAppender::spareBuffer() {
    std::lock_guard lock(m_mutex);
    if (m_spare.empty()) {
        return {};
    }
    std::vector<std::uint8_t> buffer = std::move(m_spare.back());
    m_spare.pop_back();
    buffer.clear();
    return buffer;
}

void ChunkAppender::drain() {
    std::unique_lock lock(m_mutex);
    if (m_thread.joinable()) {
        m_wakeNow = true;
        m_wake.notify_one();
        m_written.wait(lock, [this] { return (m_queue.empty() && !m_writing) || !m_failure.empty(); });
    }
    throwIfFailed();
}

void ChunkAppender::stop() {
    if (!m_thread.joinable()) {
        throwIfFailed();
        return;
    }
    {
        std::lock_guard lock(m_mutex);
        m_stopping = true;
    }
    m_wake.notify_one();
    m_thread.join();
    std::lock_guard lock(m_mutex);
    throwIfFailed();
}

void ChunkAppender::close() {
    stop();
    if (m_file == nullptr) {
        return;
    }
    m_compressed = {}; // the overview's bound was as large as its payload
    const bool closed = std::fclose(m_file) == 0;
    m_file = nullptr;
    if (!closed) {
        throw SessionError("cannot close session file " + m_path.string() + ": " + describeErrno());
    }
}

ChunkAppender::Progress ChunkAppender::progress() const {
    std::lock_guard lock(m_mutex);
    return m_progress;
}

void ChunkAppender::run() {
    std::vector<Chunk> taken;
    std::unique_lock lock(m_mutex);
    while (true) {
        m_wake.wait_for(lock, kPollInterval, [this] { return m_wakeNow || m_stopping; });
        m_wakeNow = false;
        if (m_queue.empty() || !m_failure.empty()) {
            m_queue.clear();
            m_queuedBytes = 0;
            m_written.notify_all();
            if (m_stopping) {
                return;
            }
            continue;
        }
        taken.swap(m_queue);
        m_queuedBytes = 0;
        m_writing = true;
        m_written.notify_all(); // a producer waiting for room may go on while these are written
        lock.unlock();
        std::string failure;
        try {
            for (const Chunk& chunk : taken) {
                write(chunk);
            }
            flush();
        } catch (const SessionError& error) {
            failure = error.what();
        } catch (const std::exception& error) {
            failure = writeError(m_path, error.what()).what();
        }
        lock.lock();
        m_writing = false;
        if (m_failure.empty()) {
            m_failure = failure;
        }
        for (Chunk& chunk : taken) {
            recycleLocked(std::move(chunk));
        }
        taken.clear();
        m_written.notify_all();
    }
}

void ChunkAppender::write(const Chunk& chunk) {
    const std::span<const std::uint8_t> raw = chunk.payload;
    const std::uint64_t offset = m_offset;
    // Reused from chunk to chunk, so a step allocates nothing here.
    const std::size_t bound = ZSTD_compressBound(raw.size());
    if (m_compressed.size() < bound) {
        m_compressed.resize(bound);
    }
    const std::size_t compressed =
        m_compressor == nullptr
            ? ZSTD_compress(m_compressed.data(), bound, raw.data(), raw.size(), kZstdLevel)
            : ZSTD_compress2(m_compressor, m_compressed.data(), bound, raw.data(), raw.size());
    std::uint16_t flags = SessionFormat::Zstd;
    std::span<const std::uint8_t> stored(m_compressed.data(), ZSTD_isError(compressed) ? 0 : compressed);
    if (ZSTD_isError(compressed) || compressed >= raw.size()) {
        stored = raw; // incompressible: stored as is
        flags = 0;
    }
    writeFrame(chunk.type, flags, stored, raw.size());
    if (chunk.type == SessionFormat::ChunkType::Snapshot) {
        m_snapshots.push_back({chunk.step, offset});
    }
    if (chunk.type != SessionFormat::ChunkType::Step) {
        publishOffset();
        return;
    }
    // A step's events after its StepEnd go to a second chunk of the same step: one step, two chunks.
    const bool newStep = m_stepChunks.empty() || m_stepChunks.back().step != chunk.step;
    m_stepChunks.push_back({chunk.step, offset});
    std::lock_guard lock(m_mutex);
    m_progress.bytes = m_offset;
    m_progress.events += chunk.events;
    m_progress.steps += newStep ? 1 : 0;
}

void ChunkAppender::publishOffset() {
    std::lock_guard lock(m_mutex);
    m_progress.bytes = m_offset;
}

void ChunkAppender::writeFrame(SessionFormat::ChunkType type, std::uint16_t flags,
                               std::span<const std::uint8_t> stored, std::uint64_t rawSize) {
    // The 24 header bytes (little-endian, as ByteWriter writes them), then the payload as it is, then the
    // CRC of both: nothing is copied into a frame first.
    std::array<std::uint8_t, SessionFormat::kChunkHeaderBytes> header{};
    const auto typeValue = static_cast<std::uint32_t>(type);
    const std::uint16_t chunkVersion = 1;
    const std::uint64_t storedLength = stored.size();
    const std::uint64_t rawLength = rawSize;
    std::memcpy(header.data(), &typeValue, 4);
    std::memcpy(header.data() + 4, &chunkVersion, 2);
    std::memcpy(header.data() + 6, &flags, 2);
    std::memcpy(header.data() + 8, &storedLength, 8);
    std::memcpy(header.data() + 16, &rawLength, 8);
    const std::uint32_t crc = Crc32c::compute(stored, Crc32c::compute(header));
    put(header.data(), header.size());
    put(stored.data(), stored.size());
    put(&crc, sizeof(crc));
}

void ChunkAppender::put(const void* data, std::size_t size) {
    if (m_file == nullptr || std::fwrite(data, 1, size, m_file) != size) {
        throw writeError(m_path, describeErrno());
    }
    m_offset += size;
}

void ChunkAppender::recycle(Chunk chunk) {
    std::lock_guard lock(m_mutex);
    recycleLocked(std::move(chunk));
}

void ChunkAppender::recycleLocked(Chunk chunk) {
    // Step payloads only, and a few: the next steps' payloads are as large; a snapshot's or a column block's
    // is not worth keeping.
    if (chunk.type == SessionFormat::ChunkType::Step && m_spare.size() < kSpareBuffers) {
        m_spare.push_back(std::move(chunk.payload));
    }
}

void ChunkAppender::flush() {
    if (m_file == nullptr || std::fflush(m_file) != 0) {
        throw writeError(m_path, describeErrno());
    }
}

void ChunkAppender::throwIfFailed() const {
    if (!m_failure.empty()) {
        throw SessionError(m_failure);
    }
}

} // namespace kvscope::trace
