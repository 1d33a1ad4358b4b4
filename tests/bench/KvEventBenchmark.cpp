// SPDX-License-Identifier: GPL-3.0-or-later
// A server's KV events: decoding vLLM 0.32's batches (MessagePack), and kvscope-cli attach's subscriber
// draining a publisher that floods it over ipc (events/s kept up with, messages lost to the socket's queue).
#include "kvscope/attach/KvEventSubscriber.h"
#include "kvscope/paged/KvEventDecoder.h"

#include <benchmark/benchmark.h>
#include <zmq.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>
#include <unistd.h>

namespace {

std::string realBatch() {
    std::ifstream in(std::string(KVSCOPE_SOURCE_DIR_FOR_BENCH) + "/tests/data/kvevents/vllm-0.32-batch.msgpack",
                     std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Sends one message as vLLM's publisher frames it: topic, sequence (8 bytes big-endian), payload.
void publish(zmq::socket_t& pub, std::uint64_t sequence, const std::string& payload) {
    std::string frame(8, '\0');
    for (int b = 7; b >= 0; --b, sequence >>= 8)
        frame[static_cast<std::size_t>(b)] = static_cast<char>(sequence & 0xffU);
    pub.send(zmq::buffer(std::string("kv")), zmq::send_flags::sndmore);
    pub.send(zmq::buffer(frame), zmq::send_flags::sndmore);
    pub.send(zmq::buffer(payload), zmq::send_flags::none);
}

// One real batch of 4 events (two stored blocks of 32 tokens, one more, a removal, a clear): 602 bytes.
void BM_DecodeVllmBatch(benchmark::State& state) {
    const std::string batch = realBatch();
    const std::span bytes(reinterpret_cast<const std::uint8_t*>(batch.data()), batch.size());
    std::int64_t events = 0;
    for (auto _ : state) {
        const auto decoded = kvscope::paged::KvEventDecoder::decode(bytes);
        events += static_cast<std::int64_t>(decoded.events.size());
        benchmark::DoNotOptimize(decoded.events.data());
    }
    state.counters["events/s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * batch.size()));
}
BENCHMARK(BM_DecodeVllmBatch);

// A publisher thread sends the batch as fast as ZeroMQ takes it while the subscriber polls and decodes; the
// iteration is 20000 messages. Lost messages (the queue's limit overflowed, no replay here) count as gaps.
void BM_SubscriberUnderFlood(benchmark::State& state) {
    const std::string batch = realBatch();
    const auto folder = std::filesystem::temp_directory_path() / ("kvscope-flood-" + std::to_string(::getpid()));
    std::filesystem::create_directories(folder);
    const std::string endpoint = "ipc://" + (folder / "events.pub").string();
    zmq::context_t context(1);
    zmq::socket_t pub(context, zmq::socket_type::pub);
    pub.set(zmq::sockopt::sndhwm, 100000);
    pub.bind(endpoint);
    std::int64_t received = 0;
    std::int64_t lost = 0;
    std::uint64_t sequence = 0;
    for (auto _ : state) {
        kvscope::attach::KvEventSubscriber subscriber({endpoint, "", "kv"});
        // Until the subscription has arrived (a PUB drops what it sends before).
        std::uint64_t first = sequence;
        while (subscriber.messages() == 0) {
            first = sequence;
            for (int i = 0; i < 8; ++i)
                publish(pub, sequence++, batch);
            for (auto& message : subscriber.poll(10))
                received += static_cast<std::int64_t>(message.batch.events.size());
        }
        const std::uint64_t end = sequence + 20000;
        std::thread publisher([&] {
            for (std::uint64_t s = sequence; s < end; ++s)
                publish(pub, s, batch);
        });
        std::uint64_t idle = 0;
        while (idle < 20) {
            const auto messages = subscriber.poll(10);
            idle = messages.empty() ? idle + 1 : 0;
            for (const auto& message : messages)
                received += static_cast<std::int64_t>(message.batch.events.size());
        }
        publisher.join();
        sequence = end;
        for (const auto& gap : subscriber.gaps())
            if (gap.first >= first)
                lost += static_cast<std::int64_t>(gap.last - gap.first + 1);
    }
    state.counters["events/s"] = benchmark::Counter(static_cast<double>(received), benchmark::Counter::kIsRate);
    state.counters["messages lost"] = static_cast<double>(lost);
    std::filesystem::remove_all(folder);
}
BENCHMARK(BM_SubscriberUnderFlood)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();

} // namespace
