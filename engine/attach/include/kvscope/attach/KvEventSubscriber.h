// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/paged/KvEventDecoder.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kvscope::attach {

/// One message of a server's stream, in sequence order.
struct ReceivedBatch {
    std::uint64_t sequence = 0;
    bool replayed = false; ///< caught up from the replay socket rather than received live
    paged::KvEventBatch batch;
};

/// Subscribes to a vLLM or SGLang server's KV event stream: a ZeroMQ PUB socket sending frames (topic, the
/// message's sequence number as 8 bytes big-endian, a MessagePack payload). With the server's replay endpoint
/// (a ROUTER: send the first sequence wanted, receive the buffered messages from it, then an end marker of
/// sequence -1) it catches up from sequence 0 when it connects and fills every gap in the sequence numbers it
/// sees; what the replay no longer holds, or every gap without one, is recorded in gaps(). Messages come out
/// in sequence order, each once. A payload that does not decode is refused (notices()) and the stream goes on.
class KvEventSubscriber {
public:
    struct Options {
        std::string endpoint;       ///< e.g. ipc:///tmp/vllm-events.pub, tcp://127.0.0.1:5557
        std::string replayEndpoint; ///< empty: no catching up
        std::string topic;          ///< vLLM's kv_events_config topic ("" = every topic)
        /// Most messages the socket queues while the reader is busy (ZeroMQ drops beyond it: gaps, then
        /// replayed): bounds memory when a server floods.
        int queueLimit = 100000;
    };
    /// Throws paged::PagedError naming an endpoint ZeroMQ refuses.
    explicit KvEventSubscriber(Options options);
    ~KvEventSubscriber();
    KvEventSubscriber(const KvEventSubscriber&) = delete;
    KvEventSubscriber& operator=(const KvEventSubscriber&) = delete;

    /// Waits at most timeoutMs for messages; returns those received (replayed ones before the live one that
    /// revealed their gap), possibly none.
    std::vector<ReceivedBatch> poll(int timeoutMs);

    struct Gap {
        std::uint64_t first = 0;
        std::uint64_t last = 0;
    };
    const std::vector<Gap>& gaps() const { return m_gaps; }
    /// Refused messages and skipped events, each naming its sequence number and the problem.
    const std::vector<std::string>& notices() const { return m_notices; }
    std::uint64_t messages() const { return m_messages; }
    /// Messages in gaps() (never received).
    std::uint64_t lostMessages() const;
    /// Messages received but refused (not decodable, or not framed as a KV event message).
    std::uint64_t refusedMessages() const { return m_refused; }

private:
    struct Sockets;
    void pollInto(int timeoutMs, std::vector<ReceivedBatch>& out);
    std::vector<ReceivedBatch> replay(std::uint64_t from, std::uint64_t before);
    void accept(std::uint64_t sequence, bool replayed, const std::string& payload, std::vector<ReceivedBatch>& out);

    Options m_options;
    std::unique_ptr<Sockets> m_sockets;
    std::uint64_t m_expected = 0; ///< the next sequence number due
    bool m_caughtUp = false;      ///< the first replay (from 0) is done
    std::vector<Gap> m_gaps;
    std::vector<std::string> m_notices;
    std::uint64_t m_messages = 0;
    std::uint64_t m_refused = 0;
};

} // namespace kvscope::attach
