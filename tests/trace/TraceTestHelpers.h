// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Small helpers shared by the trace tests (header-only, nothing to build).

#include "kvscope/synthetic/SyntheticSession.h"
#include "kvscope/trace/Event.h"
#include "kvscope/trace/RecordingSink.h"
#include "kvscope/trace/SeriesField.h"
#include "kvscope/trace/SessionMetadata.h"
#include "kvscope/trace/StateReducer.h"
#include "kvscope/trace/StepEvents.h"
#include "kvscope/trace/StepState.h"
#include "kvscope/trace/Timeline.h"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <gtest/gtest.h>
#include <span>
#include <string>
#include <unistd.h>
#include <vector>

namespace kvscope::trace::testing {

// Every series field, for comparing series field by field.
inline constexpr SeriesField kAllFields[] = {
    SeriesField::SeqLength,
    SeriesField::StoredTokens,
    SeriesField::KvLength,
    SeriesField::ResidualTokens,
    SeriesField::QuantizedTokens,
    SeriesField::BytesDeviceFullPrecision,
    SeriesField::BytesDeviceQuantized,
    SeriesField::BytesHost,
    SeriesField::WallNs,
};

// The metadata tests give the synthetic sessions they write to files.
inline SessionMetadata fileMetadata() {
    SessionMetadata metadata;
    metadata.model = "synthetic";
    metadata.cacheKind = "hybrid";
    return metadata;
}

// A step's events as a vector, to compare with ==.
inline std::vector<Event> eventsOf(const StepEvents& events) {
    return std::vector<Event>(events.begin(), events.end());
}

inline Event makeEvent(std::int64_t step, std::int32_t layer, EventPayload payload,
                       std::uint64_t sequence = 0) {
    return Event{step, layer, sequence, std::move(payload)};
}

// The obviously correct reference: fold every event from the start, step by step, and hand the
// state after each step to `visit`. Events must be sorted by step (as a generator emits them).
inline void replayFromStart(std::span<const Event> events, std::int64_t stepCount,
                            const std::function<void(const StepState&)>& visit) {
    StepState state;
    std::size_t index = 0;
    for (std::int64_t step = 0; step < stepCount; ++step) {
        StateReducer::beginStep(state, step);
        for (; index < events.size() && events[index].step == step; ++index)
            StateReducer::apply(state, events[index]);
        visit(state);
    }
}

// A session holding every event kind: an irregular, offloaded synthetic session (crops, resets,
// reorders, batch ops, empty steps, transfers, compute spans) plus measured spans and per-step logits.
inline std::vector<Event> everyKindSession(std::int64_t tokens = 40, std::int32_t layers = 6) {
    synthetic::SyntheticSessionOptions options;
    options.layers = layers;
    options.tokens = tokens;
    options.promptTokens = 12;
    options.window = 16;
    options.residualLength = 8;
    options.slidingEvery = 3;   // layers 1, 4
    options.quantizedEvery = 4; // layer 2
    options.staticEvery = 4;    // layer 3
    options.offload = true;
    options.irregular = true;
    options.seed = 7;
    RecordingSink sink;
    synthetic::SyntheticSession::generate(options, sink);
    std::vector<Event> events;
    std::int64_t lastStep = -1;
    for (const Event& event : sink.events()) {
        if (event.step != lastStep && lastStep >= 0) {
            events.push_back(lastStep % 2 == 0 ? Event{lastStep, -1, 0, LogitsEvent{{}, {-0.1F, -2.5F, -7.25F}, true}}
                                               : Event{lastStep, -1, 0, LogitsEvent{{3, 1}, {-0.5F, -1.5F}, false}});
            events.push_back(Event{lastStep, 0, 0, ComputeEvent{TimingSource::Measured, 10 * lastStep, 10 * lastStep + 5}});
        }
        lastStep = event.step;
        events.push_back(event);
    }
    using namespace std::string_literals;
    events.push_back(Event{lastStep, 0, 0,
                           CompressionEvent{5, 3, 2, 2, 6, {0, 3, 4, 1, 3, 4, 1, 2, 0, 2}, {0.25F, 0.5F, 0.125F, 0.75F},
                                            {2.0F, 1.5F, 1.0F, 3.0F, 2.5F, 0.875F}, {}}});
    // 1.3: heads keeping different numbers of tokens (AdaKV), nothing evicted.
    events.push_back(Event{lastStep, 1, 0, CompressionEvent{4, 4, 2, 4, 4, {0, 2, 3, 3, 1, 0, 1, 2}, {}, {}, {3, 1}}});
    events.push_back(Event{lastStep, -1, 0, StepBeginEvent{-1, "non-ASCII \xc3\xa9 and \0 inside"s}});
    // 1.8: a llama.cpp layer's error per channel (2 heads of 2 key and 1 value channels).
    events.push_back(Event{lastStep, 0, 0,
                           ChannelErrorEvent{2, 17, {0.5F, 0.25F, 0.125F, 1.5F}, {2.0F, 1.0F, 3.0F, 4.0F}, {0.75F, 0.0F},
                                             {1.0F, 0.5F}}});
    // 1.9: a speculative step (three drafts, two kept, two layers' lengths).
    events.push_back(Event{lastStep, -1, 0,
                           SpeculationEvent{DraftSource::PromptLookup, 12, {7, 8, 9}, " a b c", {2, 4, 6}, 2, {11, 11},
                                            {14, 14}}});
    // 1.4: paged serving, every kind once (a pool of 4 blocks, two requests).
    const std::vector<EventPayload> paged = {
        PagedPoolEvent{4, 4, -1, true, 0, {0, 8}, 16, 2},
        RequestArrivedEvent{"r0", 5, 2},
        RequestTokensEvent{"r0", 0, {1, 2, 3, 4, 5}, "a b c d e", {1, 3, 5, 7, 9}},
        RequestAdmittedEvent{"r0", 5, 0, false},
        BlockAllocatedEvent{"r0", 0, 0, 0},
        BlockCachedEvent{"r0", 0, 0, 0x0123456789abcdefULL, 0x1b0afb11ab707a55ULL, 0, 4},
        BlockAllocatedEvent{"r0", 0, 1, 1},
        RequestScheduledEvent{"r0", 0, 5, true},
        RequestArrivedEvent{"r1", 4, 1},
        BlockTouchedEvent{"r1", 0, 0, 0, 2},
        RequestPreemptedEvent{"r0", 5},
        BlockFreedEvent{"r0", 0, 1, 1, 0, 2, false},
        BlockFreedEvent{"r0", 0, 0, 0, 1, -1, false},
        BlockEvictedEvent{0, 3, 0x42},
        RequestFinishedEvent{"r1", FinishReason::Eos, 1},
    };
    for (const EventPayload& payload : paged) {
        events.push_back(Event{lastStep, -1, 0, payload});
    }
    // 1.10: an attached server's stream, every change once.
    const std::vector<EventPayload> server = {
        ServerCacheEvent{ServerCacheChange::Stored, true, 1, {11, 0xfedcba9876543210ULL}, 10, {1, 2, 3, 4}, 2, "GPU",
                         "a b c d", {1, 3, 5, 7}},
        ServerCacheEvent{ServerCacheChange::Removed, false, 1, {11}, 0, {}, 0, "GPU", "", {}},
        ServerCacheEvent{ServerCacheChange::Cleared, false, 0, {}, 0, {}, 0, "", "", {}},
        ServerStatusEvent{7, 1.5, true, 8, 1, 2, 317, 128},
    };
    for (const EventPayload& payload : server) {
        events.push_back(Event{lastStep, -1, 0, payload});
    }
    for (std::size_t i = 0; i < events.size(); ++i) {
        events[i].sequence = i;
    }
    return events;
}

inline Timeline timelineOf(std::span<const Event> events) {
    Timeline timeline;
    for (const Event& event : events) {
        timeline.emit(event);
    }
    return timeline;
}

// Every series field of every layer and the cache-wide one (-1) over [from, to], not downsampled: `actual`
// equals the oracle `expected` value by value. `label` names the case in a failure.
inline void expectSameSeries(const Timeline& actual, const Timeline& expected, std::int64_t from,
                             std::int64_t to, const std::string& label = {}) {
    for (std::int32_t layer = -1; layer < expected.layerCount(); ++layer) {
        for (SeriesField field : kAllFields) {
            const auto a = actual.seriesOf(layer, field, from, to, 100000);
            const auto b = expected.seriesOf(layer, field, from, to, 100000);
            ASSERT_EQ(a.size(), b.size()) << label << " layer " << layer << " " << toString(field);
            for (std::size_t i = 0; i < a.size(); ++i) {
                ASSERT_EQ(a[i].value, b[i].value)
                    << label << " layer " << layer << " " << toString(field) << " step " << a[i].step;
            }
        }
    }
}

// A file name in a fresh per-process temporary folder, removed with the folder at exit of scope.
class TemporaryFolder {
public:
    TemporaryFolder() {
        m_path = std::filesystem::temp_directory_path() /
                 ("kvscope-test-" + std::to_string(::getpid()) + "-" + std::to_string(s_counter++));
        std::filesystem::remove_all(m_path);
        std::filesystem::create_directories(m_path);
    }
    ~TemporaryFolder() {
        std::error_code ignored;
        std::filesystem::remove_all(m_path, ignored);
    }
    TemporaryFolder(const TemporaryFolder&) = delete;
    TemporaryFolder& operator=(const TemporaryFolder&) = delete;
    std::filesystem::path file(const std::string& name) const { return m_path / name; }

private:
    inline static int s_counter = 0;
    std::filesystem::path m_path;
};

} // namespace kvscope::trace::testing
