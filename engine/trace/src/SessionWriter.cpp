// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/trace/SessionWriter.h"

#include "ByteWriter.h"
#include "Crc32c.h"
#include "EventCodec.h"
#include "SessionOverview.h"

#include "kvscope/trace/SessionError.h"
#include "kvscope/trace/SessionFormat.h"
#include "kvscope/trace/StateReducer.h"
#include "kvscope/trace/Timeline.h"

#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

namespace kvscope::trace {

namespace {

// Level 3 compresses a 32-layer step (~8 KiB of events) ~5x in ~30 µs; higher levels cost more
// time per step than they save on disk.
constexpr int kZstdLevel = 3;

std::string describeErrno() { return std::strerror(errno); }

} // namespace

SessionWriter::SessionWriter(const std::filesystem::path& path, const SessionMetadata& metadata)
    : m_path(path), m_overview(std::make_unique<SessionOverview>(Timeline::kDefaultKeyframeInterval)) {
    m_file = std::fopen(path.c_str(), "wb");
    if (m_file == nullptr) {
        throw SessionError("cannot create session file " + path.string() + ": " + describeErrno());
    }
    const std::string json = metadata.toJson();
    std::vector<std::uint8_t> header;
    ByteWriter out(header);
    for (char c : SessionFormat::kMagic) {
        out.put(static_cast<std::uint8_t>(c));
    }
    out.put(SessionFormat::kMajor);
    out.put(SessionFormat::kMinor);
    out.put<std::uint32_t>(static_cast<std::uint32_t>(SessionFormat::kFixedHeaderBytes + json.size() + 4));
    out.put<std::uint32_t>(0); // flags: none defined in 1.0
    out.put<std::int64_t>(metadata.createdUnixNs);
    out.put<std::uint32_t>(static_cast<std::uint32_t>(json.size()));
    header.insert(header.end(), json.begin(), json.end());
    out.put(Crc32c::compute(header));
    try {
        writeBytes(header.data(), header.size());
        if (std::fflush(m_file) != 0) {
            throw SessionError("cannot write session file " + m_path.string() + ": " + describeErrno());
        }
    } catch (...) {
        std::fclose(m_file);
        m_file = nullptr;
        throw;
    }
}

SessionWriter::~SessionWriter() {
    try {
        finish();
    } catch (...) {
        // A destructor cannot report; what was flushed before stays readable.
    }
    if (m_file != nullptr) {
        std::fclose(m_file);
    }
    ZSTD_freeCCtx(m_compressor);
}

void SessionWriter::emit(const Event& event) {
    if (m_finished) {
        throw SessionError("session file " + m_path.string() + " is already finished; no more events can be added");
    }
    // Filed like Timeline::emit: an event older than the newest step belongs to the newest step.
    const std::int64_t step = std::max({event.step, m_pendingStep, m_lastFiledStep, std::int64_t{0}});
    if (step > m_pendingStep && !m_pending.empty()) {
        flushStep();
    }
    if (step > m_lastFiledStep) {
        // Snapshots are taken only at a step boundary, once the previous step can get no more events.
        if (m_lastFiledStep >= 0 && m_stepsSinceSnapshot >= SessionFormat::kSnapshotInterval) {
            writeSnapshot();
        }
        for (std::int64_t opened = m_lastFiledStep + 1; opened <= step; ++opened) {
            StateReducer::beginStep(m_state, opened);
        }
        m_lastFiledStep = step;
        ++m_stepsSinceSnapshot;
    }
    m_pendingStep = step;
    m_pending.push_back(event);
    StateReducer::apply(m_state, event);
    if (event.kind() == EventKind::StepEnd) {
        flushStep();
    }
}

void SessionWriter::flushStep() {
    if (m_pending.empty() || m_file == nullptr) {
        return;
    }
    std::vector<std::uint8_t> raw;
    raw.reserve(64 * m_pending.size() + 16);
    ByteWriter out(raw);
    out.put(m_pendingStep);
    out.put<std::uint32_t>(static_cast<std::uint32_t>(m_pending.size()));
    for (const Event& event : m_pending) {
        EventCodec::encode(out, event);
    }
    m_stepChunks.push_back({m_pendingStep, m_offset});
    writeChunk(static_cast<std::uint32_t>(SessionFormat::ChunkType::Step), raw);
    if (m_overview) {
        m_overview->addChunk(m_pendingStep, m_pending);
    }
    if (std::fflush(m_file) != 0) {
        throw SessionError("cannot write session file " + m_path.string() + ": " + describeErrno());
    }
    m_eventsWritten += m_pending.size();
    if (m_stepChunks.size() == 1 || m_stepChunks[m_stepChunks.size() - 2].step != m_pendingStep) {
        ++m_stepsWritten; // a step's events after its StepEnd go to a second chunk of the same step
    }
    m_pending.clear();
}

void SessionWriter::writeSnapshot() {
    std::vector<std::uint8_t> raw;
    ByteWriter out(raw);
    EventCodec::encode(out, m_state);
    m_snapshots.push_back({m_state.step, m_offset});
    writeChunk(static_cast<std::uint32_t>(SessionFormat::ChunkType::Snapshot), raw);
    m_stepsSinceSnapshot = 0;
}

void SessionWriter::finish() {
    if (m_finished || m_file == nullptr) {
        return;
    }
    flushStep();
    // The overview, then where it starts, right before the index: a reader finds it from the footer.
    if (m_overview) {
        m_overview->finish();
    }
    if (m_overview && m_overview->encodable()) {
        const std::uint64_t overviewOffset = m_offset;
        writeChunk(static_cast<std::uint32_t>(SessionFormat::ChunkType::Overview), m_overview->encode());
        std::vector<std::uint8_t> locator;
        ByteWriter(locator).put(overviewOffset);
        writeChunk(static_cast<std::uint32_t>(SessionFormat::ChunkType::OverviewLocator), locator);
    }
    m_overview.reset(); // its columns and keyframes are on disk now
    std::vector<std::uint8_t> raw;
    ByteWriter out(raw);
    for (const auto* list : {&m_stepChunks, &m_snapshots}) {
        out.put<std::uint32_t>(static_cast<std::uint32_t>(list->size()));
        for (const ChunkPosition& position : *list) {
            out.put(position.step);
            out.put(position.offset);
        }
    }
    const std::uint64_t indexOffset = m_offset;
    writeChunk(static_cast<std::uint32_t>(SessionFormat::ChunkType::Index), raw);
    std::vector<std::uint8_t> footer;
    ByteWriter footerOut(footer);
    footerOut.put(indexOffset);
    for (char c : SessionFormat::kEndMagic) {
        footerOut.put(static_cast<std::uint8_t>(c));
    }
    writeBytes(footer.data(), footer.size());
    m_finished = true;
    const bool closed = std::fclose(m_file) == 0;
    m_file = nullptr;
    if (!closed) {
        throw SessionError("cannot close session file " + m_path.string() + ": " + describeErrno());
    }
}

void SessionWriter::writeChunk(std::uint32_t type, const std::vector<std::uint8_t>& raw) {
    if (m_compressor == nullptr) {
        m_compressor = ZSTD_createCCtx();
    }
    // Not zero-filled: only the bytes zstd writes are touched (the bound is as large as the payload, and
    // for the overview that is tens of MB).
    const std::size_t bound = ZSTD_compressBound(raw.size());
    const std::unique_ptr<std::uint8_t[]> buffer(new std::uint8_t[bound]);
    // One context for the whole file: creating one per chunk costs more than compressing the chunk.
    const std::size_t compressed =
        m_compressor == nullptr
            ? ZSTD_compress(buffer.get(), bound, raw.data(), raw.size(), kZstdLevel)
            : ZSTD_compressCCtx(m_compressor, buffer.get(), bound, raw.data(), raw.size(), kZstdLevel);
    std::uint16_t flags = SessionFormat::Zstd;
    std::span<const std::uint8_t> stored(buffer.get(), ZSTD_isError(compressed) ? 0 : compressed);
    if (ZSTD_isError(compressed) || compressed >= raw.size()) {
        stored = raw; // incompressible: stored as is
        flags = 0;
    }
    std::vector<std::uint8_t> frame;
    frame.reserve(SessionFormat::kChunkHeaderBytes + stored.size() + SessionFormat::kChunkTrailerBytes);
    ByteWriter out(frame);
    out.put(type);
    out.put<std::uint16_t>(1); // chunk version
    out.put(flags);
    out.put<std::uint64_t>(stored.size());
    out.put<std::uint64_t>(raw.size());
    frame.insert(frame.end(), stored.begin(), stored.end());
    out.put(Crc32c::compute(frame));
    writeBytes(frame.data(), frame.size());
}

void SessionWriter::writeBytes(const void* data, std::size_t size) {
    if (std::fwrite(data, 1, size, m_file) != size) {
        throw SessionError("cannot write session file " + m_path.string() + ": " + describeErrno());
    }
    m_offset += size;
}

void SessionWriter::save(const std::filesystem::path& path, const SessionMetadata& metadata,
                         std::span<const Event> events) {
    std::filesystem::path temporary = path;
    temporary += ".tmp";
    try {
        SessionWriter writer(temporary, metadata);
        for (const Event& event : events) {
            writer.emit(event);
        }
        writer.finish();
    } catch (...) {
        std::error_code ignored;
        std::filesystem::remove(temporary, ignored);
        throw;
    }
    std::error_code error;
    std::filesystem::rename(temporary, path, error);
    if (error) {
        std::filesystem::remove(temporary, error);
        throw SessionError("cannot replace " + path.string() + " with the saved session: " + error.message());
    }
}

} // namespace kvscope::trace
