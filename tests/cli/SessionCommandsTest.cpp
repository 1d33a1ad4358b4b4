// SPDX-License-Identifier: GPL-3.0-or-later
// `kvscope-cli run --out`, `info`, `replay`, `export`, and the committed session files: the golden
// file of every format version and the deliberately damaged ones (tests/data/sessions/expected.json).
#include "kvscope/cli/RunCommand.h"
#include "kvscope/cli/SessionCommands.h"

#include "kvscope/trace/SessionReader.h"
#include "kvscope/trace/Timeline.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

using kvscope::cli::RunCommand;
using kvscope::cli::RunOptions;
using kvscope::cli::SessionCommands;
using Json = nlohmann::json;

namespace {

const std::filesystem::path kSessions = std::filesystem::path(KVSCOPE_TEST_DATA_DIR) / "sessions";

struct Output {
    int exitCode = 0;
    std::string out;
    std::string err;
    Json json() const { return Json::parse(out); }
};

template <typename Command> Output invoke(Command command, const SessionCommands::Options& options) {
    std::ostringstream out;
    std::ostringstream err;
    Output result;
    result.exitCode = command(options, out, err);
    result.out = out.str();
    result.err = err.str();
    return result;
}

SessionCommands::Options fileOption(const std::filesystem::path& file) {
    SessionCommands::Options options;
    options.file = file.string();
    return options;
}

std::filesystem::path temporaryFile(const std::string& name) {
    return std::filesystem::temp_directory_path() / ("kvscope-cli-" + std::to_string(::getpid()) + "-" + name);
}

Json withoutFile(Json json) {
    json.erase("file");
    return json;
}

Json readJson(const std::filesystem::path& path) {
    std::ifstream in(path);
    return Json::parse(in);
}

} // namespace

TEST(SessionCommandsTest, RunRecordsASessionThatInfoReplayAndExportRead) {
    const auto file = temporaryFile("run.kvsess");
    RunOptions run;
    run.run.preset = "gemma2";
    run.run.cache.kind = kvscope::config::CacheKind::Quantized;
    run.run.cache.residualLength = 4;
    run.run.tokens = 10;
    run.out = file.string();
    run.progress = false;
    std::ostringstream progress;
    const Json summary = RunCommand::run(run, progress);
    EXPECT_EQ(summary["session"]["steps"], 10); // the prefill picks the first of the 10 tokens
    EXPECT_EQ(summary["session"]["bytes"], std::filesystem::file_size(file));

    const Output info = invoke(SessionCommands::info, fileOption(file));
    ASSERT_EQ(info.exitCode, 0) << info.err;
    const Json header = info.json();
    EXPECT_EQ(header["format_version"], "1.10");
    EXPECT_TRUE(header["complete"].get<bool>());
    EXPECT_EQ(header["steps"], 10);
    EXPECT_EQ(header["metadata"]["model"], "gemma2");
    EXPECT_EQ(header["metadata"]["cache"], "quantized");
    EXPECT_EQ(header["metadata"]["cache_settings"]["residual"], 4);
    EXPECT_GT(header["event_counts"]["quantize_flush"].get<int>(), 0);
    EXPECT_EQ(header["event_counts"]["logits"], 10);
    EXPECT_EQ(header["metadata"]["model_config"]["model_type"], "gemma2");

    // Replay at a step equals the timeline folded from the file, and names every layer.
    const auto contents = kvscope::trace::SessionReader::read(file);
    kvscope::trace::Timeline timeline;
    for (const auto& event : contents.events) {
        timeline.emit(event);
    }
    SessionCommands::Options at = fileOption(file);
    at.step = 4;
    const Output replay = invoke(SessionCommands::replay, at);
    ASSERT_EQ(replay.exitCode, 0) << replay.err;
    const Json state = replay.json();
    const auto expected = timeline.stateAt(4);
    EXPECT_EQ(state["step"], 4);
    ASSERT_EQ(state["layers"].size(), expected.layers.size());
    for (std::size_t layer = 0; layer < expected.layers.size(); ++layer) {
        EXPECT_EQ(state["layers"][layer]["seq_length"], expected.layers[layer].seqLength);
        EXPECT_EQ(state["layers"][layer]["stored_tokens"], expected.layers[layer].storedTokens);
        EXPECT_EQ(state["layers"][layer]["kv_offset"], expected.layers[layer].kvOffset);
    }
    // The step's next-token distribution: gemma2's 259 tokens in full, a distribution whose best token is the
    // token the step chose (greedy).
    const Json& next = state["next_token"];
    ASSERT_TRUE(next["complete"].get<bool>());
    const auto logProbs = next["log_probs"].get<std::vector<double>>();
    ASSERT_EQ(logProbs.size(), 259U);
    double total = 0.0;
    for (const double value : logProbs) {
        total += std::exp(value);
    }
    EXPECT_NEAR(total, 1.0, 1e-4);
    EXPECT_EQ(std::max_element(logProbs.begin(), logProbs.end()) - logProbs.begin(), state["token_id"].get<std::int64_t>());
    const Output last = invoke(SessionCommands::replay, fileOption(file));
    EXPECT_EQ(last.json()["step"], 9);

    SessionCommands::Options exportOptions = fileOption(file);
    exportOptions.perfetto = temporaryFile("run.json").string();
    const Output exported = invoke(SessionCommands::exportPerfetto, exportOptions);
    ASSERT_EQ(exported.exitCode, 0) << exported.err;
    const Json trace = readJson(exportOptions.perfetto);
    EXPECT_GT(trace["traceEvents"].size(), 50U);
    EXPECT_EQ(trace["otherData"]["model"], "gemma2");
    std::filesystem::remove(exportOptions.perfetto);
    std::filesystem::remove(file);
}

TEST(SessionCommandsTest, ReplayGivesEachLlamaCppLayersErrorPerChannel) {
    // llama.cpp's cache quantises heads of whole blocks: a llama config with heads of 64, built-in weights.
    const auto config = temporaryFile("head64.json");
    std::ofstream(config) << R"({"model_type": "llama", "hidden_size": 128, "intermediate_size": 256,
        "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 64,
        "vocab_size": 259, "bos_token_id": 256, "eos_token_id": 257, "initializer_range": 0.5})";
    const auto file = temporaryFile("llamacpp.kvsess");
    RunOptions run;
    run.run.configPath = config.string();
    run.run.cache.kind = kvscope::config::CacheKind::LlamaCpp;
    run.run.cache.typeK = "q8_0";
    run.run.cache.typeV = "q4_0";
    run.run.tokens = 6;
    run.out = file.string();
    run.progress = false;
    std::ostringstream progress;
    RunCommand::run(run, progress);
    const Output info = invoke(SessionCommands::info, fileOption(file));
    ASSERT_EQ(info.exitCode, 0) << info.err;
    // Fewer than 64 tokens: every update of both layers is reported.
    EXPECT_EQ(info.json()["event_counts"]["channel_error"], 2 * 6);
    SessionCommands::Options all = fileOption(file);
    all.allSteps = true;
    const Output replay = invoke(SessionCommands::replay, all);
    ASSERT_EQ(replay.exitCode, 0) << replay.err;
    for (const Json& state : replay.json()) {
        for (const Json& layer : state["layers"]) {
            const Json& channels = layer["channel_error"];
            EXPECT_EQ(channels["step"], state["step"]);
            EXPECT_EQ(channels["tokens"], layer["seq_length"]) << "every token the layer holds, quantised";
            ASSERT_EQ(channels["key_error"].size(), 1U) << "one KV head";
            const auto keyError = channels["key_error"][0].get<std::vector<double>>();
            const auto keySize = channels["key_size"][0].get<std::vector<double>>();
            const auto valueError = channels["value_error"][0].get<std::vector<double>>();
            ASSERT_EQ(keyError.size(), 64U);
            ASSERT_EQ(keySize.size(), 64U);
            ASSERT_EQ(valueError.size(), 64U);
            double keys = 0.0;
            double values = 0.0;
            for (std::size_t channel = 0; channel < 64; ++channel) {
                EXPECT_LT(keyError[channel], keySize[channel]) << "q8_0 keeps most of every channel";
                keys += keyError[channel];
                values += valueError[channel];
            }
            EXPECT_GT(keys, 0.0);
            EXPECT_GT(values, keys) << "q4_0 values err more than q8_0 keys";
        }
    }
    std::filesystem::remove(file);
    std::filesystem::remove(config);
}

TEST(SessionCommandsTest, RunRefusingItsOptionsLeavesNoFile) {
    const auto file = temporaryFile("refused.kvsess");
    RunOptions run;
    run.run.preset = "llama";
    run.run.cache.kind = kvscope::config::CacheKind::Static;
    run.run.cache.maxCacheLen = 3; // shorter than the prompt: refused when the cache is built
    run.run.tokens = 2;
    run.out = file.string();
    run.progress = false;
    std::ostringstream progress;
    EXPECT_ANY_THROW(RunCommand::run(run, progress));
    EXPECT_FALSE(std::filesystem::exists(file));
}

TEST(SessionCommandsTest, ReplayRefusesStepsOutsideTheSession) {
    SessionCommands::Options options = fileOption(kSessions / "golden-1.0.kvsess");
    options.step = 100000;
    const Output replay = invoke(SessionCommands::replay, options);
    EXPECT_EQ(replay.exitCode, 2);
    EXPECT_NE(replay.err.find("step 100000 is not in the session"), std::string::npos) << replay.err;
}

TEST(SessionCommandsTest, GoldenFilesOfEveryVersionReadAsRecorded) {
    for (const auto& entry : std::filesystem::directory_iterator(kSessions)) {
        const std::string name = entry.path().filename().string();
        if (name.rfind("golden-", 0) != 0 || entry.path().extension() != ".kvsess") {
            continue;
        }
        const std::filesystem::path stem = entry.path().parent_path() / entry.path().stem();
        const Output info = invoke(SessionCommands::info, fileOption(entry.path()));
        ASSERT_EQ(info.exitCode, 0) << name << ": " << info.err;
        EXPECT_EQ(withoutFile(info.json()), withoutFile(readJson(stem.string() + ".info.json"))) << name;
        const Output replay = invoke(SessionCommands::replay, fileOption(entry.path()));
        ASSERT_EQ(replay.exitCode, 0) << name << ": " << replay.err;
        EXPECT_EQ(withoutFile(replay.json()), withoutFile(readJson(stem.string() + ".replay.json"))) << name;
    }
}

TEST(SessionCommandsTest, ReplayAllStepsGivesWhatEachStepGives) {
    SessionCommands::Options options = fileOption(kSessions / "golden-1.1.kvsess");
    options.allSteps = true;
    const Output all = invoke(SessionCommands::replay, options);
    ASSERT_EQ(all.exitCode, 0) << all.err;
    const Json states = all.json();
    ASSERT_TRUE(states.is_array());
    ASSERT_EQ(states.size(), 10u);
    for (const std::int64_t step : {0, 4, 9}) {
        SessionCommands::Options one = fileOption(kSessions / "golden-1.1.kvsess");
        one.step = step;
        const Output single = invoke(SessionCommands::replay, one);
        ASSERT_EQ(single.exitCode, 0) << single.err;
        EXPECT_EQ(withoutFile(states[static_cast<std::size_t>(step)]), withoutFile(single.json())) << "step " << step;
    }
}

TEST(SessionCommandsTest, DamagedFilesSayWhatIsWrongAndHowManyStepsAreIntact) {
    const Json expected = readJson(kSessions / "expected.json");
    ASSERT_GE(expected.size(), 8U);
    for (const auto& [name, expectation] : expected.items()) {
        const Output info = invoke(SessionCommands::info, fileOption(kSessions / name));
        EXPECT_EQ(info.exitCode, expectation["exit"].get<int>()) << name << ": " << info.err;
        const std::string message = expectation["message"];
        EXPECT_NE(info.err.find(message), std::string::npos) << name << ": " << info.err;
        if (expectation.contains("intact_steps")) {
            ASSERT_FALSE(info.out.empty()) << name;
            EXPECT_EQ(info.json()["intact_steps"], expectation["intact_steps"]) << name;
            if (expectation["exit"] == 2) {
                EXPECT_NE(info.err.find(std::to_string(expectation["intact_steps"].get<int>()) + " steps intact"),
                          std::string::npos)
                    << name << ": " << info.err;
            }
        } else {
            EXPECT_TRUE(info.out.empty()) << name << " was refused, so no JSON: " << info.out;
        }
        if (expectation.contains("skipped_chunks")) {
            EXPECT_EQ(info.json()["skipped_chunks"], expectation["skipped_chunks"]) << name;
        }
    }
}

TEST(SessionCommandsTest, SampleSessionsOpen) {
    const std::filesystem::path samples = std::filesystem::path(KVSCOPE_SOURCE_DIR) / "sessions";
    int opened = 0;
    std::uintmax_t bytes = 0;
    for (const auto& entry : std::filesystem::directory_iterator(samples)) {
        if (entry.path().extension() != ".kvsess") {
            continue;
        }
        const Output info = invoke(SessionCommands::info, fileOption(entry.path()));
        EXPECT_EQ(info.exitCode, 0) << entry.path() << ": " << info.err;
        EXPECT_GT(info.json()["steps"].get<int>(), 10) << entry.path();
        bytes += entry.file_size();
        ++opened;
    }
    EXPECT_GE(opened, 5);
    EXPECT_LT(bytes, 1'000'000U) << "sample sessions stay small";
}
