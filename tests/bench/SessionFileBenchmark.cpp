// SPDX-License-Identifier: GPL-3.0-or-later
// Session file costs at the size the issue names (32 layers x 4096 tokens): bytes per event, write
// and read speed. Counters: bytes_per_event, MB/s (file bytes per second), events/s; a live session held in
// memory against one recorded to its file (BM_LiveSession).
#include "kvscope/synthetic/SyntheticSession.h"
#include "kvscope/trace/RecordingSink.h"
#include "kvscope/trace/SessionReader.h"
#include "kvscope/trace/SessionSpill.h"
#include "kvscope/trace/SessionWriter.h"
#include "kvscope/trace/Timeline.h"

#include <benchmark/benchmark.h>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>

namespace {

using namespace kvscope::trace;
using namespace kvscope::synthetic;

const std::vector<Event>& session(bool offload) {
    static const auto make = [](bool withTransfers) {
        SyntheticSessionOptions options;
        options.layers = 32;
        options.tokens = 4096;
        options.offload = withTransfers;
        RecordingSink sink;
        sink.reserve(SyntheticSession::estimateEventCount(options));
        SyntheticSession::generate(options, sink);
        return sink.takeEvents();
    };
    static const std::vector<Event> plain = make(false);
    static const std::vector<Event> offloaded = make(true);
    return offload ? offloaded : plain;
}

std::filesystem::path sessionPath(bool offload) {
    return std::filesystem::temp_directory_path() / (offload ? "kvscope-bench-offloaded.kvsess" : "kvscope-bench.kvsess");
}

void BM_SessionWrite(benchmark::State& state) {
    const bool offload = state.range(0) != 0;
    const std::vector<Event>& events = session(offload);
    const auto path = sessionPath(offload);
    for (auto _ : state) {
        SessionWriter::save(path, SessionMetadata{}, events);
    }
    const auto bytes = static_cast<double>(std::filesystem::file_size(path));
    state.counters["bytes_per_event"] = bytes / static_cast<double>(events.size());
    state.counters["file_MB"] = bytes / 1e6;
    state.counters["MB/s"] = benchmark::Counter(bytes / 1e6, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["events"] = static_cast<double>(events.size());
}
BENCHMARK(BM_SessionWrite)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// Reading: decode every chunk (checksums, zstd, events), as Open does before building the timeline.
void BM_SessionRead(benchmark::State& state) {
    const bool offload = state.range(0) != 0;
    const auto path = sessionPath(offload);
    SessionWriter::save(path, SessionMetadata{}, session(offload));
    std::size_t events = 0;
    double decoded = 0;
    for (auto _ : state) {
        const SessionContents contents = SessionReader::read(path);
        events = contents.events.size();
        decoded = static_cast<double>(contents.payloadBytes);
        benchmark::DoNotOptimize(contents.events.data());
    }
    const auto bytes = static_cast<double>(std::filesystem::file_size(path));
    state.counters["MB/s"] = benchmark::Counter(bytes / 1e6, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["decoded_MB/s"] = benchmark::Counter(decoded / 1e6, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["events/s"] =
        benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_SessionRead)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// Open as the GUI does it: read, then build the Timeline (keyframes) that every view queries.
void BM_SessionOpen(benchmark::State& state) {
    const auto path = sessionPath(false);
    SessionWriter::save(path, SessionMetadata{}, session(false));
    for (auto _ : state) {
        const SessionContents contents = SessionReader::read(path);
        Timeline timeline;
        timeline.emitAll(contents.events);
        benchmark::DoNotOptimize(timeline.stepCount());
    }
    const auto bytes = static_cast<double>(std::filesystem::file_size(path));
    state.counters["MB/s"] = benchmark::Counter(bytes / 1e6, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_SessionOpen)->Unit(benchmark::kMillisecond);

// Seeking: the state at a step through the index footer and the nearest snapshot.
void BM_SessionStateAt(benchmark::State& state) {
    const auto path = sessionPath(false);
    SessionWriter::save(path, SessionMetadata{}, session(false));
    std::int64_t step = 0;
    for (auto _ : state) {
        benchmark::DoNotOptimize(SessionReader::stateAt(path, step));
        step = (step + 1237) % 4097;
    }
}
BENCHMARK(BM_SessionStateAt)->Unit(benchmark::kMillisecond);

} // namespace

// A live run of the session, batch by batch as the GUI receives them: held in memory (Timeline::emit) against
// recorded to its file and read back file-backed (SessionSpill, what live sessions do). Counters: the
// timeline's own bytes (Timeline::memoryBytes) and the file's.
void BM_LiveSession(benchmark::State& state) {
    const bool spilled = state.range(0) != 0;
    const std::vector<Event>& events = session(true);
    const auto path = std::filesystem::temp_directory_path() / "kvscope-bench-live.kvsess";
    std::size_t timelineBytes = 0;
    for (auto _ : state) {
        Timeline timeline;
        std::optional<SessionSpill> spill;
        if (spilled) {
            spill.emplace(path, SessionMetadata{}, timeline);
        }
        std::int64_t step = 0;
        for (const Event& event : events) {
            if (event.step != step && spill) {
                spill->flush(); // the end of a batch
            }
            step = event.step;
            if (spill) {
                spill->emit(event);
            } else {
                timeline.emit(event);
            }
        }
        if (spill) {
            spill->finish();
        }
        timelineBytes = timeline.memoryBytes();
    }
    state.counters["timeline_MB"] = static_cast<double>(timelineBytes) / 1e6;
    state.counters["steps/s"] = benchmark::Counter(4096, benchmark::Counter::kIsIterationInvariantRate);
    if (spilled) {
        state.counters["file_MB"] = static_cast<double>(std::filesystem::file_size(path)) / 1e6;
    }
}
BENCHMARK(BM_LiveSession)->ArgName("spilled")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
