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

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
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

} // namespace

SessionWriter::SessionWriter(const std::filesystem::path& path, const SessionMetadata& metadata)
    : m_path(path), m_overview(std::make_unique<SessionOverview>(Timeline::kDefaultKeyframeInterval,
                                                                 SessionFormat::kColumnBlockSteps)) {
    // One context for the whole file, its parameters set once: creating or configuring one per chunk costs
    // more than compressing the chunk.
    m_compressor = ZSTD_createCCtx();
    if (m_compressor != nullptr) {
        ZSTD_CCtx_setParameter(m_compressor, ZSTD_c_compressionLevel, kZstdLevel);
    }
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
        throw SessionError("session file " + m_path.string() +
                           " is already finished; no more events can be added");
    }
    // Filed like Timeline::emit: an event older than the newest step belongs to the newest step.
    const std::int64_t step = std::max({event.step, m_pendingStep, m_lastFiledStep, std::int64_t{0}});
    if (step > m_pendingStep && m_pendingEvents > 0) {
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
    ByteWriter out(m_pending);
    if (m_pendingEvents == 0) {
        // A new chunk: its step, and its event count, patched by flushStep().
        m_pending.clear();
        out.put(step);
        out.put<std::uint32_t>(0);
        if (m_overview) {
            m_overview->beginChunk(step);
            // The columns of the steps before, a block at a time, so that they are not all held till
            // finish().
            if (const auto block = m_overview->takeColumnBlock()) {
                writeChunk(static_cast<std::uint32_t>(SessionFormat::ChunkType::Columns), *block);
            }
        }
    }
    m_pendingStep = step;
    // Encoded now, folded now: the event itself is not kept.
    EventCodec::encode(out, event);
    ++m_pendingEvents;
    StateReducer::apply(m_state, event);
    if (m_overview) {
        m_overview->add(event);
    }
    if (event.kind() == EventKind::StepEnd) {
        flushStep();
    }
}

void SessionWriter::skipOverview() {
    if (m_eventsWritten == 0 && m_pendingEvents == 0) {
        m_overview.reset();
    }
}

void SessionWriter::setColumnBlockSteps(std::int64_t steps) {
    if (m_overview && m_eventsWritten == 0 && m_pendingEvents == 0) {
        m_overview = std::make_unique<SessionOverview>(Timeline::kDefaultKeyframeInterval, steps);
    }
}

void SessionWriter::flushStep() {
    if (m_pendingEvents == 0 || m_file == nullptr) {
        return;
    }
    std::memcpy(m_pending.data() + sizeof(std::int64_t), &m_pendingEvents, sizeof(m_pendingEvents));
    m_stepChunks.push_back({m_pendingStep, m_offset});
    writeChunk(static_cast<std::uint32_t>(SessionFormat::ChunkType::Step), m_pending);
    if (std::fflush(m_file) != 0) {
        throw SessionError("cannot write session file " + m_path.string() + ": " + describeErrno());
    }
    m_eventsWritten += m_pendingEvents;
    if (m_stepChunks.size() == 1 || m_stepChunks[m_stepChunks.size() - 2].step != m_pendingStep) {
        ++m_stepsWritten; // a step's events after its StepEnd go to a second chunk of the same step
    }
    m_pendingEvents = 0;
    m_pending.clear();
    if (m_stepChunkListener) {
        m_stepChunkListener(m_stepChunks.back());
    }
}

void SessionWriter::setStepChunkListener(std::function<void(const StepChunkLocation&)> listener) {
    m_stepChunkListener = std::move(listener);
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
        std::vector<std::uint8_t> head;
        std::vector<std::uint8_t> tail;
        m_overview->encode(head, tail);
        writeChunk(static_cast<std::uint32_t>(SessionFormat::ChunkType::Overview),
                   {std::span<const std::uint8_t>(head), m_overview->encodedKeyframes(),
                    std::span<const std::uint8_t>(tail)});
        std::vector<std::uint8_t> locator;
        ByteWriter(locator).put(overviewOffset);
        writeChunk(static_cast<std::uint32_t>(SessionFormat::ChunkType::OverviewLocator), locator);
    }
    m_overview.reset(); // its columns and keyframes are on disk now
    std::vector<std::uint8_t> raw;
    ByteWriter out(raw);
    for (const auto* list : {&m_stepChunks, &m_snapshots}) {
        out.put<std::uint32_t>(static_cast<std::uint32_t>(list->size()));
        for (const StepChunkLocation& position : *list) {
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
    m_compressed = {}; // the overview's bound was as large as its payload
    const bool closed = std::fclose(m_file) == 0;
    m_file = nullptr;
    if (!closed) {
        throw SessionError("cannot close session file " + m_path.string() + ": " + describeErrno());
    }
}

void SessionWriter::writeChunk(std::uint32_t type, std::span<const std::uint8_t> raw) {
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
    writeFrame(type, flags, stored, raw.size());
}

void SessionWriter::writeChunk(std::uint32_t type,
                               std::initializer_list<std::span<const std::uint8_t>> pieces) {
    // One zstd frame streamed from the pieces, so that a large payload (the overview: tens of MB) is never
    // put together in memory, nor is a buffer of its compressed bound allocated.
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
        return;
    }
    // Incompressible, or no context: as one payload, stored as writeChunk stores it.
    std::vector<std::uint8_t> raw;
    raw.reserve(rawSize);
    for (const auto& piece : pieces) {
        raw.insert(raw.end(), piece.begin(), piece.end());
    }
    if (m_compressor != nullptr) {
        ZSTD_CCtx_reset(m_compressor, ZSTD_reset_session_only);
    }
    writeChunk(type, raw);
}

void SessionWriter::writeFrame(std::uint32_t type, std::uint16_t flags, std::span<const std::uint8_t> stored,
                               std::uint64_t rawSize) {
    // The 24 header bytes (little-endian, as ByteWriter writes them), then the payload as it is, then the
    // CRC of both: nothing is copied into a frame first.
    std::array<std::uint8_t, SessionFormat::kChunkHeaderBytes> header{};
    const std::uint16_t chunkVersion = 1;
    const std::uint64_t storedLength = stored.size();
    const std::uint64_t rawLength = rawSize;
    std::memcpy(header.data(), &type, 4);
    std::memcpy(header.data() + 4, &chunkVersion, 2);
    std::memcpy(header.data() + 6, &flags, 2);
    std::memcpy(header.data() + 8, &storedLength, 8);
    std::memcpy(header.data() + 16, &rawLength, 8);
    const std::uint32_t crc = Crc32c::compute(stored, Crc32c::compute(header));
    writeBytes(header.data(), header.size());
    writeBytes(stored.data(), stored.size());
    writeBytes(&crc, sizeof(crc));
}

void SessionWriter::writeBytes(const void* data, std::size_t size) {
    if (std::fwrite(data, 1, size, m_file) != size) {
        throw SessionError("cannot write session file " + m_path.string() + ": " + describeErrno());
    }
    m_offset += size;
}

void SessionWriter::save(const std::filesystem::path& path, const SessionMetadata& metadata,
                         std::span<const Event> events) {
    save(path, metadata, [events](EventSink& sink) {
        for (const Event& event : events) {
            sink.emit(event);
        }
    });
}

void SessionWriter::save(const std::filesystem::path& path, const SessionMetadata& metadata,
                         const std::function<void(EventSink&)>& writeEvents) {
    std::filesystem::path temporary = path;
    temporary += ".tmp";
    try {
        SessionWriter writer(temporary, metadata);
        writeEvents(writer);
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
