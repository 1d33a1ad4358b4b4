// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/attach/KvEventSubscriber.h"
#include "kvscope/attach/ServerAttachment.h"
#include "kvscope/trace/RecordingSink.h"

#include <zmq.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <iterator>
#include <map>
#include <mutex>
#include <thread>

using namespace kvscope;

namespace {

std::string realBatch() {
    std::ifstream in(std::string(KVSCOPE_TEST_DATA_DIR) + "/kvevents/vllm-0.32-batch.msgpack", std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string sequenceBytes(std::int64_t sequence) {
    std::string bytes(8, '\0');
    for (int i = 7; i >= 0; --i, sequence >>= 8)
        bytes[static_cast<std::size_t>(i)] = static_cast<char>(sequence & 0xff);
    return bytes;
}

/// A server as vLLM's ZmqEventPublisher: PUB frames (topic, sequence, payload), and a ROUTER answering
/// (identity, "", start sequence) with the buffered messages from it, then the end marker.
class FakeServer {
public:
    explicit FakeServer(const std::filesystem::path& folder)
        : m_pub(m_context, zmq::socket_type::pub), m_router(m_context, zmq::socket_type::router),
          m_publish("ipc://" + (folder / "events.pub").string()), m_replay("ipc://" + (folder / "events.replay").string()) {
        m_pub.bind(m_publish);
        m_router.bind(m_replay);
        m_thread = std::thread([this] { serveReplays(); });
    }
    ~FakeServer() {
        m_stop = true;
        m_thread.join();
    }
    const std::string& publishEndpoint() const { return m_publish; }
    const std::string& replayEndpoint() const { return m_replay; }
    /// Buffers the message; sends it live unless `live` is false (a message the subscriber misses).
    void publish(std::int64_t sequence, const std::string& payload, bool live = true) {
        {
            std::lock_guard lock(m_mutex);
            m_buffer[sequence] = payload;
        }
        if (live) {
            m_pub.send(zmq::buffer(std::string("kv")), zmq::send_flags::sndmore);
            m_pub.send(zmq::buffer(sequenceBytes(sequence)), zmq::send_flags::sndmore);
            m_pub.send(zmq::buffer(payload), zmq::send_flags::none);
        }
    }

private:
    void serveReplays() {
        while (!m_stop) {
            zmq::pollitem_t item{m_router.handle(), 0, ZMQ_POLLIN, 0};
            zmq::poll(&item, 1, std::chrono::milliseconds(20));
            if ((item.revents & ZMQ_POLLIN) == 0)
                continue;
            zmq::message_t identity, empty, start;
            (void)m_router.recv(identity);
            (void)m_router.recv(empty);
            (void)m_router.recv(start);
            std::int64_t from = 0;
            for (std::size_t i = 0; i < start.size(); ++i)
                from = (from << 8) | static_cast<const std::uint8_t*>(start.data())[i];
            std::lock_guard lock(m_mutex);
            for (auto it = m_buffer.lower_bound(from); it != m_buffer.end(); ++it) {
                m_router.send(zmq::buffer(identity.to_string()), zmq::send_flags::sndmore);
                m_router.send(zmq::message_t(), zmq::send_flags::sndmore);
                m_router.send(zmq::buffer(std::string("kv")), zmq::send_flags::sndmore);
                m_router.send(zmq::buffer(sequenceBytes(it->first)), zmq::send_flags::sndmore);
                m_router.send(zmq::buffer(it->second), zmq::send_flags::none);
            }
            m_router.send(zmq::buffer(identity.to_string()), zmq::send_flags::sndmore);
            m_router.send(zmq::message_t(), zmq::send_flags::sndmore);
            m_router.send(zmq::message_t(), zmq::send_flags::sndmore);
            m_router.send(zmq::buffer(sequenceBytes(-1)), zmq::send_flags::sndmore);
            m_router.send(zmq::message_t(), zmq::send_flags::none);
        }
    }

    zmq::context_t m_context{1};
    zmq::socket_t m_pub;
    zmq::socket_t m_router;
    std::string m_publish;
    std::string m_replay;
    std::mutex m_mutex;
    std::map<std::int64_t, std::string> m_buffer;
    std::atomic<bool> m_stop{false};
    std::thread m_thread;
};

/// Polls until `count` messages came or 10 s passed; re-publishes `resend` meanwhile (a PUB drops what it
/// sends before the subscription arrives).
std::vector<attach::ReceivedBatch> collect(attach::KvEventSubscriber& subscriber, std::size_t count,
                                           const std::function<void()>& resend = {}) {
    std::vector<attach::ReceivedBatch> all;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (all.size() < count && std::chrono::steady_clock::now() < deadline) {
        if (resend)
            resend();
        for (auto& received : subscriber.poll(50))
            all.push_back(std::move(received));
    }
    return all;
}

std::filesystem::path freshFolder(const std::string& name) {
    const auto folder = std::filesystem::temp_directory_path() / ("kvscope-subscriber-" + name + "-" +
                                                                  std::to_string(::getpid()));
    std::filesystem::remove_all(folder);
    std::filesystem::create_directories(folder);
    return folder;
}

} // namespace

// A subscriber joining late catches up from the replay socket, fills a gap in the live stream from it, and
// refuses a malformed message naming it while the stream goes on: every message once, in order.
TEST(KvEventSubscriberTest, CatchesUpFillsGapsAndRefusesMalformedMessages) {
    const auto folder = freshFolder("replay");
    FakeServer server(folder);
    const std::string batch = realBatch();
    server.publish(0, batch);
    server.publish(1, batch);
    attach::KvEventSubscriber subscriber({server.publishEndpoint(), server.replayEndpoint(), "kv"});
    auto received = collect(subscriber, 3, [&] { server.publish(2, batch); });
    ASSERT_EQ(received.size(), 3U);
    EXPECT_TRUE(received[0].replayed);
    EXPECT_EQ(received[0].sequence, 0U);
    EXPECT_EQ(received[1].sequence, 1U);
    EXPECT_EQ(received[2].sequence, 2U);
    EXPECT_EQ(received[2].batch.events.size(), 4U);

    server.publish(3, batch, false);
    server.publish(4, batch, false);
    server.publish(5, batch);
    received = collect(subscriber, 3);
    ASSERT_EQ(received.size(), 3U);
    EXPECT_EQ(received[0].sequence, 3U);
    EXPECT_TRUE(received[0].replayed);
    EXPECT_EQ(received[1].sequence, 4U);
    EXPECT_EQ(received[2].sequence, 5U);
    EXPECT_FALSE(received[2].replayed);

    server.publish(6, std::string("\xc1", 1));
    server.publish(7, batch);
    received = collect(subscriber, 1);
    ASSERT_EQ(received.size(), 1U);
    EXPECT_EQ(received[0].sequence, 7U);
    EXPECT_EQ(subscriber.notices(),
              std::vector<std::string>{
                  "message 6 refused: malformed MessagePack at byte 1 of 1: byte 0xc1 is reserved in MessagePack"});
    EXPECT_TRUE(subscriber.gaps().empty());
    EXPECT_EQ(subscriber.messages(), 8U);
    std::filesystem::remove_all(folder);
}

// Without a replay endpoint what was missed cannot be fetched: it is marked as a gap.
TEST(KvEventSubscriberTest, MarksGapsItCannotFill) {
    const auto folder = freshFolder("gaps");
    FakeServer server(folder);
    const std::string batch = realBatch();
    attach::KvEventSubscriber subscriber({server.publishEndpoint(), "", "kv"});
    auto received = collect(subscriber, 1, [&] { server.publish(0, batch); });
    ASSERT_EQ(received.size(), 1U);
    server.publish(1, batch, false);
    server.publish(2, batch, false);
    server.publish(3, batch);
    received = collect(subscriber, 1);
    ASSERT_EQ(received.size(), 1U);
    EXPECT_EQ(received[0].sequence, 3U);
    ASSERT_EQ(subscriber.gaps().size(), 1U);
    EXPECT_EQ(subscriber.gaps()[0].first, 1U);
    EXPECT_EQ(subscriber.gaps()[0].last, 2U);
    std::filesystem::remove_all(folder);
}

// What kvscope --attach records: one step per message, its events as the server sent them (the decoder is the
// oracle: checked against vLLM's own classes), then the stream's status; lost and refused messages counted.
TEST(KvEventSubscriberTest, AttachmentRecordsAStepPerMessageWithTheServersEvents) {
    const auto folder = freshFolder("attachment");
    FakeServer server(folder);
    const std::string batch = realBatch();
    const paged::KvEventBatch decoded = paged::KvEventDecoder::decode(
        std::span(reinterpret_cast<const std::uint8_t*>(batch.data()), batch.size()));
    server.publish(0, batch);
    trace::RecordingSink sink;
    attach::ServerAttachment attachment({server.publishEndpoint(), server.replayEndpoint(), "kv", "", 0}, sink);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    bool published = false;
    while (attachment.steps() < 2 && std::chrono::steady_clock::now() < deadline) {
        attachment.poll(50);
        if (attachment.steps() >= 1 && !published) {
            server.publish(1, std::string("\xc1", 1));
            server.publish(2, batch);
            published = true;
        }
    }
    ASSERT_EQ(attachment.steps(), 2) << "message 1 is refused: no step of its own";
    const std::vector<trace::Event>& events = sink.events();
    ASSERT_EQ(events.size(), 2 * (decoded.events.size() + 1));
    for (std::int64_t step = 0; step < 2; ++step) {
        const std::size_t first = static_cast<std::size_t>(step) * (decoded.events.size() + 1);
        for (std::size_t i = 0; i < decoded.events.size(); ++i) {
            const trace::Event& event = events[first + i];
            EXPECT_EQ(event.step, step);
            const auto& cache = std::get<trace::ServerCacheEvent>(event.payload);
            const paged::KvCacheEvent& sent = decoded.events[i];
            EXPECT_EQ(static_cast<int>(cache.change), static_cast<int>(sent.type));
            EXPECT_EQ(cache.blockHashes, std::vector<std::uint64_t>(sent.blockHashes.begin(), sent.blockHashes.end()));
            EXPECT_EQ(cache.hasParent, sent.parentBlockHash.has_value());
            EXPECT_EQ(cache.tokenIds, std::vector<std::int64_t>(sent.tokenIds.begin(), sent.tokenIds.end()));
            EXPECT_EQ(cache.medium, sent.medium);
            EXPECT_EQ(cache.group, sent.groupIdx);
            EXPECT_TRUE(cache.text.empty()) << "no tokenizer given";
        }
        const auto& status = std::get<trace::ServerStatusEvent>(events[first + decoded.events.size()].payload);
        EXPECT_EQ(status.messageSequence, step == 0 ? 0U : 2U);
        EXPECT_EQ(status.replayed, step == 0);
        EXPECT_EQ(status.prefixCacheQueries, -1) << "no metrics address given";
    }
    const auto& last = std::get<trace::ServerStatusEvent>(events.back().payload);
    EXPECT_EQ(last.messages, 3);
    EXPECT_EQ(last.refusedMessages, 1);
    EXPECT_EQ(last.lostMessages, 0);
    std::filesystem::remove_all(folder);
}

TEST(KvEventSubscriberTest, AttachmentRefusesAMetricsAddressItCannotUse) {
    const auto folder = freshFolder("attachment-metrics");
    FakeServer server(folder);
    trace::RecordingSink sink;
    try {
        attach::ServerAttachment({server.publishEndpoint(), "", "", "https://127.0.0.1:8000/metrics", 0}, sink);
        FAIL() << "https accepted";
    } catch (const paged::PagedError& error) {
        EXPECT_NE(std::string(error.what()).find("give it as http://HOST:PORT/metrics"), std::string::npos)
            << error.what();
    }
    std::filesystem::remove_all(folder);
}
