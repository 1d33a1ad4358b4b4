// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/attach/ServerStreamRecorder.h"

#include "kvscope/trace/Event.h"
#include "kvscope/trace/EventSink.h"

namespace kvscope::attach {

namespace {

trace::ServerCacheChange changeOf(paged::KvCacheEvent::Type type) {
    switch (type) {
    case paged::KvCacheEvent::Type::BlockStored:
        return trace::ServerCacheChange::Stored;
    case paged::KvCacheEvent::Type::BlockRemoved:
        return trace::ServerCacheChange::Removed;
    case paged::KvCacheEvent::Type::AllBlocksCleared:
        return trace::ServerCacheChange::Cleared;
    }
    return trace::ServerCacheChange::Cleared;
}

} // namespace

ServerStreamRecorder::ServerStreamRecorder(trace::EventSink& sink, PieceFunction pieceOf)
    : m_sink(sink), m_pieceOf(std::move(pieceOf)) {}

void ServerStreamRecorder::record(const ReceivedBatch& received, const KvEventSubscriber& subscriber) {
    for (const paged::KvCacheEvent& event : received.batch.events) {
        trace::ServerCacheEvent out;
        out.change = changeOf(event.type);
        out.blockHashes.assign(event.blockHashes.begin(), event.blockHashes.end());
        out.hasParent = event.parentBlockHash.has_value();
        out.parentHash = event.parentBlockHash.value_or(0);
        out.tokenIds.assign(event.tokenIds.begin(), event.tokenIds.end());
        out.blockSize = event.blockSize;
        out.medium = event.medium;
        out.group = event.groupIdx;
        if (m_pieceOf && out.change == trace::ServerCacheChange::Stored) {
            for (const std::int64_t id : out.tokenIds) {
                out.text += m_pieceOf(id);
                out.pieceEnds.push_back(static_cast<std::int64_t>(out.text.size()));
            }
        }
        m_sink.emit(trace::Event{m_step, -1, m_sequence++, std::move(out)});
    }
    m_lastMessage = received.sequence;
    m_lastServerTime = received.batch.timestamp;
    m_lastReplayed = received.replayed;
    emitStatus(subscriber);
}

void ServerStreamRecorder::recordMetrics(const MetricsScraper::PrefixCache& metrics,
                                         const KvEventSubscriber& subscriber) {
    if (m_metrics == metrics) {
        return;
    }
    m_metrics = metrics;
    emitStatus(subscriber);
}

void ServerStreamRecorder::emitStatus(const KvEventSubscriber& subscriber) {
    trace::ServerStatusEvent status;
    status.messageSequence = m_lastMessage;
    status.serverTime = m_lastServerTime;
    status.replayed = m_lastReplayed;
    status.messages = static_cast<std::int64_t>(subscriber.messages());
    status.lostMessages = static_cast<std::int64_t>(subscriber.lostMessages());
    status.refusedMessages = static_cast<std::int64_t>(subscriber.refusedMessages());
    status.prefixCacheQueries = m_metrics ? m_metrics->queries : -1;
    status.prefixCacheHits = m_metrics ? m_metrics->hits : -1;
    m_sink.emit(trace::Event{m_step, -1, m_sequence++, status});
    ++m_step;
}

} // namespace kvscope::attach
