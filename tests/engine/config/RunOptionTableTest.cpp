// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/config/RunOptionTable.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <gtest/gtest.h>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace kvscope::config {
namespace {

/// Applies `value` to fresh settings through the option called `name`; the refusal, or "".
std::string applied(const std::string& name, const std::string& value, RunSettings& settings) {
    const RunOption* option = RunOptionTable::find(name);
    if (option == nullptr) {
        ADD_FAILURE() << "no option " << name;
        return "no option";
    }
    return option->apply(settings, value);
}

TEST(RunOptionTableTest, ListsTheRunOptionsInOrderWithTheirValueWordsAndDefaults) {
    struct Row {
        const char* name;
        const char* valueName;
        const char* shownDefault; ///< what --help shows for a default RunSettings
        RunOption::Group group;
    };
    using G = RunOption::Group;
    const std::vector<Row> rows = {
        {"preset", "NAME", "", G::Model},
        {"config", "FILE", "", G::Model},
        {"checkpoint", "DIR", "", G::Model},
        {"model", "FILE", "", G::Model},
        {"gguf-weights", "HOW", "packed", G::Model},
        {"tokenizer", "PATH", "", G::Model},
        {"cache", "KIND", "dynamic", G::Model},
        {"backend", "NAME", "min-max", G::Model},
        {"nbits", "N", "4", G::Model},
        {"group", "N", "0", G::Model},
        {"residual", "N", "128", G::Model},
        {"cache-type-k", "TYPE", "f16", G::Model},
        {"cache-type-v", "TYPE", "f16", G::Model},
        {"attn-rotation", "ON_OFF", "on", G::Model},
        {"max-cache-len", "N", "0", G::Model},
        {"prompt", "TEXT", "The key-value cache", G::Model},
        {"prompt-file", "FILE", "", G::Model},
        {"tokens", "N", "32", G::Model},
        {"weight-seed", "S", "", G::Model},
        {"device", "DEVICE", "cpu", G::Model},
        {"threads", "N", "0", G::Model},
        {"chat", "", "", G::Model},
        {"ignore-eos", "", "", G::Decoding},
        {"beams", "K", "1", G::Decoding},
        {"prompt-lookup-num-tokens", "N", "0", G::Decoding},
        {"assistant-model", "FILE", "", G::Decoding},
        {"num-assistant-tokens", "N", "5", G::Decoding},
        {"seed", "S", "0", G::Decoding},
        {"temperature", "T", "0", G::Decoding},
        {"top-k", "K", "0", G::Decoding},
        {"press", "NAME", "", G::Press},
        {"ratio", "R", "0", G::Press},
        {"press-option", "KEY=VALUE", "", G::Press},
        {"interval", "N", "", G::Press},
        {"target-size", "N", "", G::Press},
    };
    const std::vector<RunOption>& options = RunOptionTable::options();
    ASSERT_EQ(options.size(), rows.size());
    for (std::size_t index = 0; index < rows.size(); ++index) {
        SCOPED_TRACE(rows[index].name);
        EXPECT_EQ(options[index].name, rows[index].name);
        EXPECT_EQ(options[index].valueName, rows[index].valueName);
        EXPECT_EQ(options[index].current(RunSettings{}), rows[index].shownDefault);
        EXPECT_EQ(options[index].group, rows[index].group);
        EXPECT_FALSE(options[index].help.empty());
        EXPECT_EQ(RunOptionTable::find(rows[index].name), &options[index]);
    }
    EXPECT_EQ(RunOptionTable::find("out"), nullptr) << "kvscope-cli run's own options stay out of the table";
    EXPECT_EQ(RunOptionTable::find("screenshot"), nullptr) << "kvscope's own options stay out of the table";
}

TEST(RunOptionTableTest, TheDefaultShownIsWhatTheSettingsHold) {
    // Defaults are read from the settings a command starts from, never written in the table: fidelity
    // starts at 128 tokens, and a changed RunSettings default would show the same way.
    RunSettings settings;
    settings.tokens = 128;
    settings.cache.kind = CacheKind::Quantized;
    settings.weightSeed = 9;
    settings.press.options["compression_interval"] = "7";
    EXPECT_EQ(RunOptionTable::find("tokens")->current(settings), "128");
    EXPECT_EQ(RunOptionTable::find("cache")->current(settings), "quantized");
    EXPECT_EQ(RunOptionTable::find("weight-seed")->current(settings), "9");
    EXPECT_EQ(RunOptionTable::find("interval")->current(settings), "7");
}

TEST(RunOptionTableTest, EveryOptionReadsItsValueIntoTheSettings) {
    const std::filesystem::path promptFile =
        std::filesystem::temp_directory_path() / "kvscope-run-option-prompt.txt";
    std::ofstream(promptFile, std::ios::binary) << "a prompt\non two lines";
    struct Case {
        const char* name;
        const char* value;
        std::function<void(RunSettings&)> expected;
    };
    const std::vector<Case> cases = {
        {"preset", "llama", [](RunSettings& s) { s.preset = "llama"; }},
        {"config", "c.json", [](RunSettings& s) { s.configPath = "c.json"; }},
        {"checkpoint", "/m", [](RunSettings& s) { s.checkpointDir = "/m"; }},
        {"model", "smollm2", [](RunSettings& s) { s.modelFile = "smollm2"; }},
        {"gguf-weights", "float32", [](RunSettings& s) { s.ggufWeights = GgufWeights::Float32; }},
        {"tokenizer", "/t", [](RunSettings& s) { s.tokenizerPath = "/t"; }},
        {"cache", "offloaded", [](RunSettings& s) { s.cache.kind = CacheKind::Offloaded; }},
        {"backend", "quanto", [](RunSettings& s) { s.cache.backend = QuantizerBackend::MinMax; }},
        {"backend", "hqq", [](RunSettings& s) { s.cache.backend = QuantizerBackend::Hqq; }},
        {"nbits", "2", [](RunSettings& s) { s.cache.nbits = 2; }},
        {"group", "16", [](RunSettings& s) { s.cache.groupSize = 16; }},
        {"residual", "8", [](RunSettings& s) { s.cache.residualLength = 8; }},
        {"max-cache-len", "64", [](RunSettings& s) { s.cache.maxCacheLen = 64; }},
        {"cache-type-k", "q4_0", [](RunSettings& s) { s.cache.typeK = "q4_0"; }},
        {"cache-type-v", "q8_0", [](RunSettings& s) { s.cache.typeV = "q8_0"; }},
        {"attn-rotation", "off", [](RunSettings& s) { s.cache.attnRotation = false; }},
        {"prompt", "hello", [](RunSettings& s) { s.prompt = "hello"; }},
        {"tokens", "5", [](RunSettings& s) { s.tokens = 5; }},
        {"weight-seed", "0", [](RunSettings& s) { s.weightSeed = 0; }},
        {"device", "cuda", [](RunSettings& s) { s.device = ComputeDevice::Cuda; }},
        {"threads", "3", [](RunSettings& s) { s.threads = 3; }},
        {"chat", "", [](RunSettings& s) { s.chat = true; }},
        {"ignore-eos", "", [](RunSettings& s) { s.ignoreEos = true; }},
        {"beams", "4", [](RunSettings& s) { s.beams = 4; }},
        {"prompt-lookup-num-tokens", "3", [](RunSettings& s) { s.promptLookupNumTokens = 3; }},
        {"assistant-model", "draft.gguf", [](RunSettings& s) { s.assistantModel = "draft.gguf"; }},
        {"num-assistant-tokens", "7", [](RunSettings& s) { s.numAssistantTokens = 7; }},
        {"seed", "11", [](RunSettings& s) { s.seed = 11; }},
        {"temperature", "0.7", [](RunSettings& s) { s.temperature = 0.7; }},
        {"top-k", "40", [](RunSettings& s) { s.topK = 40; }},
        {"press", "snapkv", [](RunSettings& s) { s.press.name = "snapkv"; }},
        {"ratio", "0.25", [](RunSettings& s) { s.press.ratio = 0.25; }},
        {"press-option", "window_size=8", [](RunSettings& s) { s.press.options["window_size"] = "8"; }},
        {"press-option", "base=a=b", [](RunSettings& s) { s.press.options["base"] = "a=b"; }},
        {"interval", "6", [](RunSettings& s) { s.press.options["compression_interval"] = "6"; }},
        {"target-size", "32", [](RunSettings& s) { s.press.options["target_size"] = "32"; }},
    };
    std::set<std::string> covered;
    for (const Case& c : cases) {
        SCOPED_TRACE(std::string(c.name) + " " + c.value);
        RunSettings settings;
        EXPECT_EQ(applied(c.name, c.value, settings), "");
        RunSettings expected;
        c.expected(expected);
        EXPECT_EQ(settings, expected);
        covered.insert(c.name);
    }
    RunSettings fromFile;
    EXPECT_EQ(applied("prompt-file", promptFile.string(), fromFile), "");
    EXPECT_EQ(fromFile.prompt, "a prompt\non two lines");
    covered.insert("prompt-file");
    std::filesystem::remove(promptFile);
    for (const RunOption& option : RunOptionTable::options()) {
        EXPECT_TRUE(covered.count(option.name)) << option.name << " has no case";
    }
}

TEST(RunOptionTableTest, RefusalsSayWhatIsAllowed) {
    const struct {
        const char* name;
        const char* value;
        const char* refusal;
    } cases[] = {
        {"tokens", "0", "must be a whole number at least 1, got `0`"},
        {"tokens", "3.5", "must be a whole number at least 1, got `3.5`"},
        {"tokens", "", "must be a whole number at least 1, got ``"},
        {"nbits", "99999999999", "must be a whole number at most 2147483647, got `99999999999`"},
        {"residual", "-1", "must be a whole number at least 1, got `-1`"},
        {"seed", "-1", "must be a whole number at least 0, got `-1`"},
        {"weight-seed", "x", "must be a whole number at least 0, got `x`"},
        {"threads", "-1", "must be a whole number at least 0, got `-1`"},
        {"temperature", "-1", "must be a number at least 0, got `-1`"},
        {"temperature", "inf", "must be a number at least 0, got `inf`"},
        {"ratio", "1", "must be a number in [0, 1), got `1`"},
        {"ratio", "half", "must be a number in [0, 1), got `half`"},
        {"cache", "paged", "unknown value `paged` (allowed: dynamic, static, quantized, offloaded, llamacpp)"},
        {"attn-rotation", "yes", "unknown value `yes` (allowed: on, off)"},
        {"backend", "int4", "unknown value `int4` (allowed: min-max, quanto (= min-max), hqq)"},
        {"device", "tpu", "unknown value `tpu` (allowed: cpu, cuda)"},
        {"press-option", "window", "expected key=value, got `window`"},
        {"press-option", "=4", "expected key=value, got `=4`"},
        {"interval", "0", "must be a whole number at least 1, got `0`"},
        {"prompt-file", "/no/such/prompt.txt", "cannot read the prompt file `/no/such/prompt.txt`"},
    };
    for (const auto& c : cases) {
        RunSettings settings;
        EXPECT_EQ(applied(c.name, c.value, settings), c.refusal) << c.name << " " << c.value;
        EXPECT_EQ(settings, RunSettings{}) << c.name << ": a refused value leaves the settings alone";
    }
    RunSettings settings;
    const std::string press = applied("press", "snap", settings);
    EXPECT_EQ(press.rfind("unknown press `snap` (allowed: streaming_llm", 0), 0u) << press;
}

TEST(RunOptionTableTest, ExclusionsNameBothOptionsAndWhy) {
    const auto given = [](std::set<std::string> names) {
        return [names](const std::string& name) { return names.count(name) > 0; };
    };
    const RunOption& preset = *RunOptionTable::find("preset");
    EXPECT_EQ(RunOptionTable::conflict(preset, given({"preset", "checkpoint"})),
              "--preset excludes --checkpoint: give one model source: a preset, a config.json, a checkpoint "
              "folder or a GGUF model file");
    EXPECT_EQ(RunOptionTable::conflict(*RunOptionTable::find("checkpoint"), given({"checkpoint", "model"})),
              "--checkpoint excludes --model: give one model source: a preset, a config.json, a checkpoint "
              "folder or a GGUF model file");
    EXPECT_EQ(RunOptionTable::conflict(preset, given({"preset", "tokenizer"})), "");
    EXPECT_EQ(
        RunOptionTable::conflict(*RunOptionTable::find("tokenizer"), given({"tokenizer", "checkpoint"})),
        "--tokenizer excludes --checkpoint: a checkpoint folder or GGUF file brings its own tokenizer (its "
        "tokenizer.json or tokenizer.model, or its tokenizer.ggml metadata); give --tokenizer with --preset or "
        "--config");
    EXPECT_EQ(
        RunOptionTable::conflict(*RunOptionTable::find("prompt-file"), given({"prompt", "prompt-file"})),
        "--prompt-file excludes --prompt: give the prompt as text or as a file, not both");
}

TEST(RunOptionTableTest, ThreadsDefaultToEveryCore) {
    RunSettings settings;
    EXPECT_EQ(computeThreads(settings), static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
    settings.threads = 3;
    EXPECT_EQ(computeThreads(settings), 3);
}

} // namespace
} // namespace kvscope::config
