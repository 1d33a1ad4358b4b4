// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/trace/PerfettoExport.h"

#include "GoldenFile.h"
#include "TraceTestHelpers.h"

#include "kvscope/trace/SessionError.h"
#include "kvscope/trace/SessionReader.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

using namespace kvscope::trace;
using namespace kvscope::synthetic;
using namespace kvscope::trace::testing;
using Json = nlohmann::json;

namespace {

SessionMetadata metadata() {
    SessionMetadata result;
    result.model = "llama";
    result.cacheKind = "offloaded";
    result.device = "cpu";
    result.prompt = "hello";
    return result;
}

Json exported(std::span<const Event> events) {
    std::ostringstream out;
    PerfettoExport::write(out, metadata(), events);
    return Json::parse(out.str());
}

std::vector<Event> offloadedSession() {
    SyntheticSessionOptions options;
    options.layers = 4;
    options.tokens = 20;
    options.promptTokens = 8;
    options.window = 12;
    options.residualLength = 6;
    options.slidingEvery = 4;
    options.quantizedEvery = 4;
    options.offload = true;
    RecordingSink sink;
    SyntheticSession::generate(options, sink);
    return sink.events();
}

std::map<std::pair<int, int>, std::string> laneNames(const Json& trace) {
    std::map<std::pair<int, int>, std::string> names;
    for (const Json& event : trace["traceEvents"]) {
        if (event["ph"] == "M" && event["name"] == "thread_name") {
            names[{event["pid"].get<int>(), event["tid"].get<int>()}] = event["args"]["name"];
        }
    }
    return names;
}

} // namespace

TEST(PerfettoExportTest, NamesEveryLaneAndDescribesTheSession) {
    const Json trace = exported(offloadedSession());
    EXPECT_EQ(trace["displayTimeUnit"], "ns");
    EXPECT_EQ(trace["otherData"]["model"], "llama");
    EXPECT_EQ(trace["otherData"]["timing"], "modeled");
    EXPECT_EQ(trace["otherData"]["kvscope_format"], "1.10");
    std::set<std::string> names;
    for (const auto& [lane, name] : laneNames(trace)) {
        names.insert(name);
    }
    for (const char* expected : {"decode steps", "compute L00", "compute L03", "prefetch stream (host to device)",
                                 "offload (compute stream)", "quantize"}) {
        EXPECT_TRUE(names.count(expected)) << expected;
    }
}

TEST(PerfettoExportTest, EveryEventCarriesStepAndLayerAndThreadSlicesNest) {
    const std::vector<Event> events = offloadedSession();
    const Json trace = exported(events);
    std::map<std::string, int> phases;
    std::map<std::pair<int, int>, double> laneEnd;
    std::map<std::string, int> openAsync;
    for (const Json& event : trace["traceEvents"]) {
        const std::string phase = event["ph"];
        ++phases[phase];
        if (phase == "M" || phase == "C") {
            continue; // lane names and counter values: their args are the names and plotted values
        }
        ASSERT_TRUE(event["args"].contains("step")) << event.dump();
        ASSERT_TRUE(event["args"].contains("layer")) << event.dump();
        EXPECT_GE(event["ts"].get<double>(), 0.0);
        if (phase == "X") {
            const std::pair<int, int> lane{event["pid"], event["tid"]};
            EXPECT_GE(event["ts"].get<double>() + 1e-9, laneEnd[lane]) << "overlapping slices: " << event.dump();
            laneEnd[lane] = event["ts"].get<double>() + event["dur"].get<double>();
        } else if (phase == "b") {
            ++openAsync[event["id"]];
        } else if (phase == "e") {
            --openAsync[event["id"]];
        }
    }
    for (const auto& [id, open] : openAsync) {
        EXPECT_EQ(open, 0) << id;
    }
    const std::int64_t steps = timelineOf(events).stepCount();
    std::int64_t computes = 0;
    std::int64_t transfers = 0;
    for (const Event& event : events) {
        computes += event.kind() == EventKind::Compute;
        transfers += event.kind() == EventKind::Transfer;
    }
    EXPECT_EQ(phases["X"] + phases["b"], steps + computes + transfers);
    EXPECT_GT(phases["s"], 0);
    EXPECT_EQ(phases["s"], phases["f"] + static_cast<int>(0) + (phases["s"] - phases["f"])); // closed or open at the end
    EXPECT_GT(phases["f"], 0) << "offload -> prefetch -> use flows end at an update";
    EXPECT_EQ(phases["t"], phases["f"]);
    EXPECT_GT(phases["i"], 0); // flushes and window slides
}

TEST(PerfettoExportTest, CountersFollowOccupancyAndMemoryPerStep) {
    const std::vector<Event> events = offloadedSession();
    const Timeline timeline = timelineOf(events);
    const Json trace = exported(events);
    std::vector<Json> occupancy;
    std::vector<Json> memory;
    for (const Json& event : trace["traceEvents"]) {
        if (event["ph"] != "C") {
            continue;
        }
        if (event["name"] == "occupancy (stored tokens)") {
            occupancy.push_back(event["args"]);
        } else if (event["name"] == "memory (bytes)") {
            memory.push_back(event["args"]);
        }
    }
    ASSERT_EQ(static_cast<std::int64_t>(occupancy.size()), timeline.stepCount());
    ASSERT_EQ(static_cast<std::int64_t>(memory.size()), timeline.stepCount());
    for (std::int64_t step = 0; step < timeline.stepCount(); ++step) {
        const StepState state = timeline.stateAt(step);
        EXPECT_EQ(occupancy[static_cast<std::size_t>(step)]["L02"], state.layers[2].storedTokens) << step;
        EXPECT_EQ(memory[static_cast<std::size_t>(step)]["host"], state.memoryHost) << step;
    }
}

TEST(PerfettoExportTest, OverlappingSlicesOnOneLaneBecomeAsyncSlices) {
    std::vector<Event> events{
        Event{0, -1, 0, StepBeginEvent{-1, "p"}},
        Event{0, 1, 1,
              TransferEvent{TransferDirection::Prefetch, TransferLane::Prefetch, TimingSource::Measured, 0, 5000, 64}},
        Event{0, 2, 2,
              TransferEvent{TransferDirection::Prefetch, TransferLane::Prefetch, TimingSource::Measured, 2000, 7000, 64}},
        Event{0, -1, 3, StepEndEvent{5, "x", 9000}},
    };
    const Json trace = exported(events);
    int complete = 0;
    int asyncBegins = 0;
    for (const Json& event : trace["traceEvents"]) {
        if (event.value("cat", "") == "prefetch") {
            complete += event["ph"] == "X";
            asyncBegins += event["ph"] == "b";
        }
    }
    EXPECT_EQ(complete, 1);
    EXPECT_EQ(asyncBegins, 1);
    EXPECT_EQ(trace["otherData"]["timing"], "measured");
}

TEST(PerfettoExportTest, UntimedSessionsUseWallTimeForSteps) {
    std::vector<Event> events{
        Event{0, -1, 0, StepEndEvent{1, "a", 2'000'000}},
        Event{1, -1, 1, StepEndEvent{2, "b", 3'000'000}},
    };
    const Json trace = exported(events);
    std::vector<std::pair<double, double>> steps;
    for (const Json& event : trace["traceEvents"]) {
        if (event.value("cat", "") == "step") {
            steps.emplace_back(event["ts"], event["dur"]);
        }
    }
    ASSERT_EQ(steps.size(), 2U);
    EXPECT_DOUBLE_EQ(steps[0].first, 0.0);
    EXPECT_DOUBLE_EQ(steps[0].second, 2000.0);
    EXPECT_DOUBLE_EQ(steps[1].first, 2000.0);
    EXPECT_DOUBLE_EQ(steps[1].second, 3000.0);
    EXPECT_EQ(trace["otherData"]["timing"], "wall");
}

TEST(PerfettoExportTest, WritesFilesAtomically) {
    TemporaryFolder folder;
    const auto path = folder.file("trace.json");
    PerfettoExport::write(path, metadata(), offloadedSession());
    std::ifstream in(path);
    EXPECT_NO_THROW(Json::parse(in));
    EXPECT_FALSE(std::filesystem::exists(folder.file("trace.json.tmp")));
    EXPECT_THROW(PerfettoExport::write(folder.file("missing/trace.json"), metadata(), offloadedSession()),
                 SessionError);
}

// A press session (golden-1.2: a compression of every layer at the prefill): each compression is an
// instant on the cache lane, and every step from then on has counters of the kept and dropped tokens.
TEST(PerfettoExportTest, CompressionsAreInstantsAndKeptTokensACounterPerLayer) {
    const SessionContents contents =
        SessionReader::read(std::filesystem::path(KVSCOPE_SOURCE_DIR) / "tests/data/sessions/golden-1.2.kvsess");
    const std::vector<Event>& events = contents.events;
    std::map<std::int32_t, const CompressionEvent*> compressions;
    std::int64_t steps = 0;
    for (const Event& event : events) {
        steps = std::max(steps, event.step + 1);
        if (const auto* compression = std::get_if<CompressionEvent>(&event.payload)) {
            compressions[event.layer] = compression;
        }
    }
    ASSERT_FALSE(compressions.empty()) << "golden-1.2 holds compression events";
    const Json trace = exported(events);
    std::vector<Json> kept;
    std::vector<Json> dropped;
    std::size_t instants = 0;
    for (const Json& event : trace["traceEvents"]) {
        if (event["ph"] == "C" && event["name"] == "press: kept tokens") {
            kept.push_back(event["args"]);
        } else if (event["ph"] == "C" && event["name"] == "press: dropped tokens (total)") {
            dropped.push_back(event["args"]);
        } else if (event["ph"] == "i" && event["name"].get<std::string>().rfind("compression L", 0) == 0) {
            ++instants;
            const CompressionEvent& compression = *compressions.at(event["args"]["layer"].get<std::int32_t>());
            EXPECT_EQ(event["args"]["length_after"], compression.lengthAfter);
            EXPECT_EQ(event["args"]["dropped"], compression.droppedCount);
        }
    }
    EXPECT_EQ(instants, compressions.size());
    ASSERT_EQ(static_cast<std::int64_t>(kept.size()), steps) << "the prefill compressed, so every step has the counter";
    for (const auto& [layer, compression] : compressions) {
        const std::string name = "L" + std::string(layer < 10 ? "0" : "") + std::to_string(layer);
        EXPECT_EQ(kept.back()[name], compression->lengthAfter) << name;
        EXPECT_EQ(dropped.back()[name], compression->lengthBefore - compression->lengthAfter) << name;
    }
}

// A serving session (golden-1.4: four requests a, b, c, d; 24 scheduled slices, 12 evictions, 2 preemptions
// as its info JSON counts them) exports a lane per request and the pool's counters.
TEST(PerfettoExportTest, ServingSessionsGetALanePerRequestAndPoolCounters) {
    const SessionContents contents =
        SessionReader::read(std::filesystem::path(KVSCOPE_TEST_DATA_DIR) / "sessions/golden-1.4.kvsess");
    const Json trace = exported(contents.events);
    const auto names = laneNames(trace);
    EXPECT_EQ(names.at({3, 1}), "request a");
    EXPECT_EQ(names.at({3, 2}), "request b");
    EXPECT_EQ(names.at({3, 3}), "request c");
    EXPECT_EQ(names.at({3, 4}), "request d");
    int slices = 0;
    int finished = 0;
    int preempted = 0;
    Json lastTotals;
    Json lastBlocks;
    for (const Json& event : trace["traceEvents"]) {
        if (event["pid"] != 3) {
            continue;
        }
        if (event["ph"] == "X") {
            ++slices;
            EXPECT_GE(event["tid"].get<int>(), 1);
        } else if (event["ph"] == "i") {
            finished += event["name"] == "finished" ? 1 : 0;
            preempted += event["name"] == "preempted" ? 1 : 0;
        } else if (event["ph"] == "C" && event["name"] == "evictions and preemptions (total)") {
            lastTotals = event["args"];
        } else if (event["ph"] == "C" && event["name"] == "pool: blocks") {
            lastBlocks = event["args"];
        }
    }
    EXPECT_EQ(slices, 24);
    EXPECT_EQ(finished, 4);
    EXPECT_EQ(preempted, 2);
    EXPECT_EQ(lastTotals["evictions"], 12);
    EXPECT_EQ(lastTotals["preemptions"], 2);
    EXPECT_EQ(lastBlocks["held"], 0) << "every request finished";
    EXPECT_EQ(lastBlocks["free"], 14);
}

// Golden outputs (tests/data/goldens/perfetto/): the export of every sample session (sessions/ and the format's
// golden sessions) and of the synthetic offloaded one, byte for byte.
TEST(PerfettoExportTest, SampleSessionsExportAsTheirGoldenFiles) {
    std::vector<std::filesystem::path> files;
    const auto add = [&files](const std::filesystem::path& folder, const std::string& prefix) {
        for (const auto& entry : std::filesystem::directory_iterator(folder)) {
            if (entry.path().extension() == ".kvsess" && entry.path().filename().string().starts_with(prefix)) {
                files.push_back(entry.path());
            }
        }
    };
    add(std::filesystem::path(KVSCOPE_SOURCE_DIR) / "sessions", "");
    add(std::filesystem::path(KVSCOPE_TEST_DATA_DIR) / "sessions", "golden-");
    std::sort(files.begin(), files.end());
    ASSERT_EQ(files.size(), 15U);
    for (const std::filesystem::path& file : files) {
        const SessionContents contents = SessionReader::read(file);
        std::ostringstream out;
        PerfettoExport::write(out, contents.metadata, contents.events);
        EXPECT_TRUE(kvscope::testing::GoldenFile::matches("perfetto/" + file.stem().string() + ".json", out.str()));
    }
    std::ostringstream synthetic;
    PerfettoExport::write(synthetic, metadata(), offloadedSession());
    EXPECT_TRUE(kvscope::testing::GoldenFile::matches("perfetto/synthetic-offloaded.json", synthetic.str()));
}

TEST(PerfettoExportTest, ASpeculationIsAnInstantOnTheCacheLane) {
    const std::vector<Event> events = {
        Event{0, -1, 0, StepBeginEvent{-1, "a b"}},
        Event{0, -1, 1, SpeculationEvent{DraftSource::PromptLookup, 3, {7, 8}, "", {}, 1, {0}, {4}}},
        Event{0, -1, 2, StepEndEvent{9, "c", 1000}},
    };
    const Json trace = exported(events);
    std::vector<Json> speculations;
    for (const Json& event : trace["traceEvents"]) {
        if (event["ph"] == "i" && event["cat"] == "cache") {
            speculations.push_back(event);
        }
    }
    ASSERT_EQ(speculations.size(), 1U);
    EXPECT_EQ(speculations[0]["name"], "speculation: 1 of 2 drafts kept");
    EXPECT_EQ(speculations[0]["args"]["source"], "prompt_lookup");
    EXPECT_EQ(speculations[0]["args"]["first_position"], 3);
    EXPECT_EQ(speculations[0]["args"]["rolled_back"], 1);
}
