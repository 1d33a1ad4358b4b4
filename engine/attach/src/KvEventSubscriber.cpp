// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/attach/KvEventSubscriber.h"

#include "kvscope/paged/PagedError.h"

#include <zmq.hpp>

#include <cerrno>
#include <chrono>

namespace kvscope::attach {

namespace {

std::uint64_t bigEndian(const zmq::message_t& frame) {
    std::uint64_t value = 0;
    const auto* bytes = static_cast<const std::uint8_t*>(frame.data());
    for (std::size_t i = 0; i < frame.size() && i < 8; ++i)
        value = (value << 8) | bytes[i];
    return value;
}

std::string bigEndianBytes(std::uint64_t value) {
    std::string bytes(8, '\0');
    for (int i = 7; i >= 0; --i, value >>= 8)
        bytes[static_cast<std::size_t>(i)] = static_cast<char>(value & 0xffU);
    return bytes;
}

/// The frames of one multipart message, at most `limit` of them (more is not a KV event message).
std::vector<zmq::message_t> receiveAll(zmq::socket_t& socket, std::size_t limit) {
    std::vector<zmq::message_t> frames;
    do {
        zmq::message_t frame;
        if (!socket.recv(frame, zmq::recv_flags::none))
            break;
        if (frames.size() < limit)
            frames.push_back(std::move(frame));
    } while (socket.get(zmq::sockopt::rcvmore));
    return frames;
}

} // namespace

struct KvEventSubscriber::Sockets {
    zmq::context_t context{1};
    zmq::socket_t live{context, zmq::socket_type::sub};
    zmq::socket_t replay{context, zmq::socket_type::dealer};
};

KvEventSubscriber::KvEventSubscriber(Options options) : m_options(std::move(options)), m_sockets(std::make_unique<Sockets>()) {
    try {
        m_sockets->live.set(zmq::sockopt::rcvhwm, m_options.queueLimit);
        m_sockets->live.set(zmq::sockopt::linger, 0);
        m_sockets->live.set(zmq::sockopt::subscribe, m_options.topic);
        m_sockets->live.connect(m_options.endpoint);
    } catch (const zmq::error_t& error) {
        throw paged::PagedError("cannot subscribe to " + m_options.endpoint + ": " + error.what() +
                                " (give an endpoint as the server's --kv-events-config names it, e.g. "
                                "tcp://127.0.0.1:5557 or ipc:///tmp/vllm-events.pub)");
    }
    if (!m_options.replayEndpoint.empty()) {
        try {
            m_sockets->replay.set(zmq::sockopt::linger, 0);
            m_sockets->replay.connect(m_options.replayEndpoint);
        } catch (const zmq::error_t& error) {
            throw paged::PagedError("cannot connect to the replay endpoint " + m_options.replayEndpoint + ": " +
                                    error.what() + " (vLLM's replay_endpoint, e.g. tcp://127.0.0.1:5558)");
        }
    }
}

KvEventSubscriber::~KvEventSubscriber() = default;

std::uint64_t KvEventSubscriber::lostMessages() const {
    std::uint64_t lost = 0;
    for (const Gap& gap : m_gaps)
        lost += gap.last - gap.first + 1;
    return lost;
}

void KvEventSubscriber::accept(std::uint64_t sequence, bool replayed, const std::string& payload,
                               std::vector<ReceivedBatch>& out) {
    ++m_messages;
    m_expected = sequence + 1;
    try {
        ReceivedBatch received;
        received.sequence = sequence;
        received.replayed = replayed;
        received.batch = paged::KvEventDecoder::decode(
            std::span(reinterpret_cast<const std::uint8_t*>(payload.data()), payload.size()));
        for (const std::string& notice : received.batch.notices)
            m_notices.push_back("message " + std::to_string(sequence) + ": " + notice);
        out.push_back(std::move(received));
    } catch (const paged::PagedError& error) {
        ++m_refused;
        m_notices.push_back("message " + std::to_string(sequence) + " refused: " + error.what());
    }
}

std::vector<ReceivedBatch> KvEventSubscriber::replay(std::uint64_t from, std::uint64_t before) {
    std::vector<ReceivedBatch> out;
    if (m_options.replayEndpoint.empty()) {
        if (from < before)
            m_gaps.push_back({from, before - 1});
        return out;
    }
    m_sockets->replay.send(zmq::message_t(), zmq::send_flags::sndmore);
    m_sockets->replay.send(zmq::buffer(bigEndianBytes(from)), zmq::send_flags::none);
    // The server answers from its buffer, then (b"", -1, b""); a server that does not answer in time leaves
    // the gap marked.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    std::uint64_t next = from;
    while (std::chrono::steady_clock::now() < deadline) {
        zmq::pollitem_t item{m_sockets->replay.handle(), 0, ZMQ_POLLIN, 0};
        zmq::poll(&item, 1, std::chrono::milliseconds(200));
        if ((item.revents & ZMQ_POLLIN) == 0)
            continue;
        std::vector<zmq::message_t> frames = receiveAll(m_sockets->replay, 5);
        if (!frames.empty() && frames.front().size() == 0)
            frames.erase(frames.begin()); // the DEALER's empty delimiter
        if (frames.size() != 3) {
            m_notices.push_back("a replay reply of " + std::to_string(frames.size()) +
                                " frames refused (expected topic, sequence, payload)");
            continue;
        }
        if (frames[1].size() == 8 && bigEndian(frames[1]) == ~std::uint64_t{0})
            break; // end marker
        const std::uint64_t sequence = bigEndian(frames[1]);
        if (sequence < next || (before != 0 && sequence >= before))
            continue; // already had it, or the live stream brings it
        if (sequence > next)
            m_gaps.push_back({next, sequence - 1});
        accept(sequence, true, frames[2].to_string(), out);
        next = sequence + 1;
    }
    if (before != 0 && next < before)
        m_gaps.push_back({next, before - 1});
    return out;
}

std::vector<ReceivedBatch> KvEventSubscriber::poll(int timeoutMs) {
    std::vector<ReceivedBatch> out;
    try {
        pollInto(timeoutMs, out);
    } catch (const zmq::error_t& error) {
        // A signal (the user's Ctrl-C) interrupts the wait: return what came so far, the caller decides.
        if (error.num() != EINTR)
            throw paged::PagedError(std::string("the KV event stream failed: ") + error.what());
    }
    return out;
}

void KvEventSubscriber::pollInto(int timeoutMs, std::vector<ReceivedBatch>& out) {
    if (!m_caughtUp && !m_options.replayEndpoint.empty()) {
        // Everything the server still buffers from its first message on: a late subscriber misses nothing.
        m_caughtUp = true;
        out = replay(0, 0);
    }
    zmq::pollitem_t item{m_sockets->live.handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, std::chrono::milliseconds(timeoutMs));
    while ((item.revents & ZMQ_POLLIN) != 0) {
        std::vector<zmq::message_t> frames = receiveAll(m_sockets->live, 3);
        if (frames.size() != 3 || frames[1].size() != 8) {
            ++m_refused;
            m_notices.push_back("a message of " + std::to_string(frames.size()) +
                                " frames refused (expected topic, 8-byte sequence, payload)");
        } else {
            const std::uint64_t sequence = bigEndian(frames[1]);
            if (sequence >= m_expected) {
                if (sequence > m_expected) {
                    std::vector<ReceivedBatch> missed = replay(m_expected, sequence);
                    out.insert(out.end(), std::make_move_iterator(missed.begin()), std::make_move_iterator(missed.end()));
                }
                accept(sequence, false, frames[2].to_string(), out);
            }
        }
        item.revents = 0;
        zmq::poll(&item, 1, std::chrono::milliseconds(0));
    }
}

} // namespace kvscope::attach
