// SPDX-License-Identifier: GPL-3.0-or-later
// Replay fidelity: for every preset and cache kind, a session recorded while generating (through
// SessionWriter, as `kvscope-cli run --out` does) reads back into a Timeline equal to the one
// recorded live, at every step, and its Perfetto export parses.
#include "kvscope/model/ByteTokenizer.h"
#include "kvscope/model/ModelLoader.h"
#include "kvscope/runtime/CacheFactory.h"
#include "kvscope/runtime/Generator.h"
#include "kvscope/trace/FanOutSink.h"
#include "kvscope/trace/PerfettoExport.h"
#include "kvscope/trace/SessionReader.h"
#include "kvscope/trace/SessionWriter.h"
#include "kvscope/trace/Timeline.h"

#include "ModelTestHelpers.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <unistd.h>

using CacheOptions = kvscope::config::CacheSettings;
using kvscope::runtime::GenerationOptions;
using kvscope::runtime::Generator;
namespace trace = kvscope::trace;

namespace {

CacheOptions cacheInSessionReplay(const std::string& kind, const std::string& backend = "min-max", int nbits = 4) {
    CacheOptions options;
    options.kind = kvscope::config::cacheKindFromString(kind).value();
    options.backend = kvscope::config::quantizerBackendFromString(backend).value();
    options.nbits = nbits;
    options.residualLength = 3; // flushes within the run
    return options;
}

const std::map<std::string, CacheOptions>& cacheKinds() {
    static const std::map<std::string, CacheOptions> kinds{{"dynamic", cacheInSessionReplay("dynamic")},
                                                           {"static", cacheInSessionReplay("static")},
                                                           {"offloaded", cacheInSessionReplay("offloaded")},
                                                           {"minmax2", cacheInSessionReplay("quantized", "min-max", 2)},
                                                           {"hqq4", cacheInSessionReplay("quantized", "hqq", 4)}};
    return kinds;
}

std::vector<std::string> cacheKindNames() {
    std::vector<std::string> names;
    for (const auto& [name, options] : cacheKinds()) {
        names.push_back(name);
    }
    return names;
}

using CaseInSessionReplay = std::tuple<std::string, std::string>;

class SessionReplayTest : public ::testing::TestWithParam<CaseInSessionReplay> {};

} // namespace

TEST_P(SessionReplayTest, ReplayedTimelineEqualsTheLiveOneAtEveryStep) {
    const auto& [preset, kind] = GetParam();
    const auto path = std::filesystem::temp_directory_path() /
                      ("kvscope-replay-" + std::to_string(::getpid()) + "-" + preset + "-" + kind + ".kvsess");
    auto model = kvscope::model::ModelLoader::builtin(kvscope::testing::presetConfig(preset), 3);
    GenerationOptions options;
    options.maxNewTokens = 8;
    options.stopAtEos = false;
    options.temperature = 1.0;
    options.seed = 11;
    trace::Timeline live;
    trace::SessionMetadata metadata;
    metadata.model = preset;
    metadata.cacheKind = kind;
    {
        trace::SessionWriter writer(path, metadata);
        trace::FanOutSink sinks{&live, &writer};
        Generator generator(*model, cacheKinds().at(kind), options, &sinks);
        generator.prefill(kvscope::model::ByteTokenizer::encode("Replay me"));
        while (!generator.finished()) {
            generator.step();
        }
        writer.finish();
    }
    const trace::SessionContents contents = trace::SessionReader::read(path);
    std::filesystem::remove(path);
    ASSERT_TRUE(contents.complete) << contents.damage;
    ASSERT_EQ(contents.events.size(), live.eventCount());
    EXPECT_TRUE(std::equal(contents.events.begin(), contents.events.end(), live.events().begin()));
    trace::Timeline replayed;
    for (const trace::Event& event : contents.events) {
        replayed.emit(event);
    }
    ASSERT_EQ(replayed.stepCount(), 8); // the prefill picks the first of the 8 tokens
    for (std::int64_t step = 0; step < live.stepCount(); ++step) {
        ASSERT_TRUE(replayed.stateAt(step) == live.stateAt(step)) << preset << " " << kind << " step " << step;
    }
    // Every step carries its next-token distribution, for comparing sessions.
    std::int64_t logits = 0;
    for (const trace::Event& event : contents.events) {
        if (const auto* distribution = std::get_if<trace::LogitsEvent>(&event.payload)) {
            ++logits;
            EXPECT_TRUE(distribution->complete); // the byte vocabulary (259) is stored whole
            EXPECT_EQ(distribution->logProbs.size(), 259U);
            EXPECT_TRUE(distribution->tokenIds.empty());
        }
    }
    EXPECT_EQ(logits, 8);
    std::ostringstream perfetto;
    trace::PerfettoExport::write(perfetto, contents.metadata, contents.events);
    EXPECT_GT(perfetto.str().size(), 1000U);
}

INSTANTIATE_TEST_SUITE_P(EveryPresetAndCache, SessionReplayTest,
                         ::testing::Combine(::testing::ValuesIn(kvscope::testing::presetNames()),
                                            ::testing::ValuesIn(cacheKindNames())),
                         [](const ::testing::TestParamInfo<CaseInSessionReplay>& info) {
                             std::string name = std::get<0>(info.param) + "_" + std::get<1>(info.param);
                             for (char& c : name) {
                                 if (!std::isalnum(static_cast<unsigned char>(c))) {
                                     c = '_';
                                 }
                             }
                             return name;
                         });
