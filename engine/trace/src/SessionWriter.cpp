// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/trace/SessionWriter.h"

#include "ByteWriter.h"
#include "ChunkAppender.h"
#include "Crc32c.h"
#include "EventCodec.h"
#include "SessionOverview.h"
#include "kvscope/trace/SessionError.h"
#include "kvscope/trace/SessionFormat.h"
#include "kvscope/trace/StateReducer.h"
#include "kvscope/trace/Timeline.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <system_error>

namespace kvscope::trace {

SessionWriter::SessionWriter(const std::filesystem::path& path, const SessionMetadata& metadata,
                             ChunkWriting writing)
    : m_path(path), m_writing(writing),
      m_overview(std::make_unique<SessionOverview>(Timeline::kDefaultKeyframeInterval,
                                                   SessionFormat::kColumnBlockSteps)) {
    // The header goes out on this thread, before any chunk: the file is a session file from its creation.
    m_appender = std::make_unique<ChunkAppender>(path);
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
    m_appender->writeBytes(header);
    if (writing == ChunkWriting::Background) {
        m_appender->startBackground();
    }
}

SessionWriter::~SessionWriter() {
    try {
        finish();
    } catch (...) {
        // A destructor cannot report; what was flushed before stays readable.
    }
}

void SessionWriter::emit(const Event& event) {
    if (m_finished) {
        throw SessionError("session file " + m_path.string() +
                           " is already finished; no more events can be added");
    }
    // Filed like Timeline::emit: an event older than the newest step belongs to the newest step.
    const std::int64_t step = std::max({event.step, m_pendingStep, m_lastFiledStep, std::int64_t{0}});
    if (step > m_pendingStep && m_pendingEvents > 0) {
        handOverStep();
    }
    if (step > m_lastFiledStep) {
        // Snapshots are taken only at a step boundary, once the previous step can get no more events. A serving
        // or attached session gets none: the snapshot layout has no pool or server cache, so a reader seeking
        // from one would lose them (SessionReader::stateAt folds such a session from its start instead).
        if (m_lastFiledStep >= 0 && m_stepsSinceSnapshot >= SessionFormat::kSnapshotInterval &&
            !m_state.paged.active && !m_state.server.active) {
            writeSnapshot();
        }
        for (std::int64_t opened = m_lastFiledStep + 1; opened <= step; ++opened) {
            StateReducer::beginStep(m_state, opened);
        }
        m_lastFiledStep = step;
        ++m_stepsSinceSnapshot;
    }
    if (m_pendingEvents == 0) {
        // A new chunk: its step, and its event count, patched by handOverStep().
        m_pending = m_appender->spareBuffer();
        ByteWriter start(m_pending);
        start.put(step);
        start.put<std::uint32_t>(0);
        if (m_overview) {
            m_overview->beginChunk(step);
            // The columns of the steps before, a block at a time, so that they are not all held till
            // finish().
            if (auto block = m_overview->takeColumnBlock()) {
                m_appender->append({SessionFormat::ChunkType::Columns, step, 0, std::move(*block)});
            }
            // Likewise its transfers and compute spans (1.9): an offloaded session has millions.
            if (auto block = m_overview->takeSpanBlock(SessionFormat::kSpanBlockSpans)) {
                m_appender->append({SessionFormat::ChunkType::Spans, step, 0, std::move(*block)});
            }
        }
    }
    m_pendingStep = step;
    // Encoded now, folded now: the event itself is not kept.
    ByteWriter out(m_pending);
    EventCodec::encode(out, event);
    ++m_pendingEvents;
    StateReducer::apply(m_state, event);
    if (m_overview) {
        m_overview->add(event);
    }
    if (event.kind() == EventKind::StepEnd) {
        handOverStep();
    }
}

void SessionWriter::skipOverview() {
    if (m_lastFiledStep < 0) {
        m_overview.reset();
    }
}

void SessionWriter::setColumnBlockSteps(std::int64_t steps) {
    if (m_overview && m_lastFiledStep < 0) {
        m_overview = std::make_unique<SessionOverview>(Timeline::kDefaultKeyframeInterval, steps);
    }
}

void SessionWriter::flushStep() {
    if (m_finished) {
        return;
    }
    handOverStep();
    m_appender->drain();
}

void SessionWriter::handOverStep() {
    if (m_pendingEvents == 0) {
        return;
    }
    std::memcpy(m_pending.data() + sizeof(std::int64_t), &m_pendingEvents, sizeof(m_pendingEvents));
    ChunkAppender::Chunk chunk{SessionFormat::ChunkType::Step, m_pendingStep, m_pendingEvents,
                               std::move(m_pending)};
    // Handed over whole: a step whose write fails is not retried, as the file may hold part of its chunk.
    m_pending.clear();
    m_pendingEvents = 0;
    m_appender->append(std::move(chunk));
    if (m_stepChunkListener) {
        m_stepChunkListener(m_appender->stepChunks().back());
    }
}

void SessionWriter::setStepChunkListener(std::function<void(const StepChunkLocation&)> listener) {
    if (listener && m_writing != ChunkWriting::CallersThread) {
        throw std::logic_error("SessionWriter: a step chunk listener needs ChunkWriting::CallersThread");
    }
    m_stepChunkListener = std::move(listener);
}

std::int64_t SessionWriter::stepsWritten() const {
    return m_appender->progress().steps;
}

std::uint64_t SessionWriter::bytesWritten() const {
    return m_appender->progress().bytes;
}

std::uint64_t SessionWriter::eventsWritten() const {
    return m_appender->progress().events;
}

void SessionWriter::writeSnapshot() {
    std::vector<std::uint8_t> raw;
    ByteWriter out(raw);
    EventCodec::encode(out, m_state);
    m_appender->append({SessionFormat::ChunkType::Snapshot, m_state.step, 0, std::move(raw)});
    m_stepsSinceSnapshot = 0;
}

void SessionWriter::finish() {
    if (m_finished) {
        return;
    }
    handOverStep();
    // stop() writes every chunk handed over before the overview; the rest goes out on this thread.
    m_appender->stop();
    // The overview, then where it starts, right before the index: a reader finds it from the footer.
    if (m_overview) {
        m_overview->finish();
        if (auto block = m_overview->takeSpanBlock(1)) {
            m_appender->append({SessionFormat::ChunkType::Spans, m_lastFiledStep, 0, std::move(*block)});
        }
    }
    if (m_overview && m_overview->encodable()) {
        const std::uint64_t overviewOffset = m_appender->progress().bytes;
        std::vector<std::uint8_t> head;
        std::vector<std::uint8_t> tail;
        m_overview->encode(head, tail);
        m_appender->append(SessionFormat::ChunkType::Overview,
                           {std::span<const std::uint8_t>(head), m_overview->encodedKeyframes(),
                            std::span<const std::uint8_t>(tail)});
        std::vector<std::uint8_t> locator;
        ByteWriter(locator).put(overviewOffset);
        m_appender->append({SessionFormat::ChunkType::OverviewLocator, 0, 0, std::move(locator)});
    }
    m_overview.reset(); // its columns and keyframes are on disk now
    std::vector<std::uint8_t> raw;
    ByteWriter out(raw);
    for (const auto* list : {&m_appender->stepChunks(), &m_appender->snapshots()}) {
        out.put<std::uint32_t>(static_cast<std::uint32_t>(list->size()));
        for (const StepChunkLocation& position : *list) {
            out.put(position.step);
            out.put(position.offset);
        }
    }
    const std::uint64_t indexOffset = m_appender->progress().bytes;
    m_appender->append({SessionFormat::ChunkType::Index, 0, 0, std::move(raw)});
    std::vector<std::uint8_t> footer;
    ByteWriter footerOut(footer);
    footerOut.put(indexOffset);
    for (char c : SessionFormat::kEndMagic) {
        footerOut.put(static_cast<std::uint8_t>(c));
    }
    m_appender->writeBytes(footer);
    m_finished = true;
    m_appender->close();
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
