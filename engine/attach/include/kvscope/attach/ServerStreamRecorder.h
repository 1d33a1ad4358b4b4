// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/attach/KvEventSubscriber.h"
#include "kvscope/attach/MetricsScraper.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace kvscope::trace {
class EventSink;
}

namespace kvscope::attach {

/// Turns what an attached server sends into a session's events (format 1.10): one step per message, its
/// ServerCache events (with the tokens' text when a piece function is set) then a ServerStatus with the
/// stream's counters and the last metrics read; a change of metrics alone is a step of its own.
class ServerStreamRecorder {
public:
    /// The text of one token (a tokenizer's decode of it alone).
    using PieceFunction = std::function<std::string(std::int64_t tokenId)>;

    ServerStreamRecorder(trace::EventSink& sink, PieceFunction pieceOf = {});

    /// One received message; `subscriber` gives the counters after it.
    void record(const ReceivedBatch& received, const KvEventSubscriber& subscriber);
    /// The server's metrics; records a step when they changed.
    void recordMetrics(const MetricsScraper::PrefixCache& metrics, const KvEventSubscriber& subscriber);
    /// Steps recorded so far (the next one's number).
    std::int64_t steps() const { return m_step; }

private:
    void emitStatus(const KvEventSubscriber& subscriber);

    trace::EventSink& m_sink;
    PieceFunction m_pieceOf;
    std::int64_t m_step = 0;
    std::uint64_t m_sequence = 0;
    std::uint64_t m_lastMessage = 0;
    double m_lastServerTime = 0;
    bool m_lastReplayed = false;
    std::optional<MetricsScraper::PrefixCache> m_metrics;
};

} // namespace kvscope::attach
