// SPDX-License-Identifier: GPL-3.0-or-later
// kvscope's run options (QtRunOptions) against kvscope-cli run's (cli::CliRunOptions, torch-free): one
// table, so every command line reads into the same RunSettings and is refused with the same words.
#include "kvscope/gui/window/QtRunOptions.h"

#include "kvscope/cli/CliRunOptions.h"
#include "kvscope/paged/ServingOptionTable.h"

#include <CLI/CLI.hpp>
#include <QCommandLineParser>
#include <QTemporaryDir>
#include <fstream>
#include <functional>
#include <gtest/gtest.h>
#include <set>
#include <string>
#include <variant>
#include <vector>

namespace kvscope::gui {
namespace {

using Parsed = std::variant<config::RunSettings, std::string>;

Parsed throughQt(const std::vector<std::string>& arguments) {
    QCommandLineParser parser;
    QtRunOptions::addTo(parser, config::RunSettings{});
    QStringList line{QStringLiteral("kvscope")};
    for (const std::string& argument : arguments) {
        line << QString::fromStdString(argument);
    }
    if (!parser.parse(line)) {
        return parser.errorText().toStdString();
    }
    config::RunSettings settings;
    if (const QString refusal = QtRunOptions::apply(parser, settings); !refusal.isEmpty()) {
        return refusal.toStdString();
    }
    return settings;
}

Parsed throughCli(const std::vector<std::string>& arguments) {
    CLI::App app;
    config::RunSettings settings;
    cli::CliRunOptions::addTo(app, settings, config::RunOptionTable::allGroups());
    std::vector<const char*> argv{"kvscope-cli"};
    for (const std::string& argument : arguments) {
        argv.push_back(argument.c_str());
    }
    try {
        app.parse(static_cast<int>(argv.size()), argv.data());
    } catch (const CLI::ParseError& error) {
        return std::string(error.what());
    }
    return settings;
}

config::RunSettings changed(const std::function<void(config::RunSettings&)>& change) {
    config::RunSettings settings;
    change(settings);
    return settings;
}

TEST(QtRunOptionsTest, EveryRunOptionParsesAlikeThroughBothCommandLines) {
    QTemporaryDir directory;
    const std::string promptFile = directory.filePath(QStringLiteral("prompt.txt")).toStdString();
    std::ofstream(promptFile, std::ios::binary) << "from a file";
    struct Case {
        std::vector<std::string> arguments;
        std::function<void(config::RunSettings&)> expected;
    };
    using S = config::RunSettings;
    const std::vector<Case> cases = {
        {{}, [](S&) {}},
        {{"--preset", "gemma3", "--cache", "quantized", "--backend", "hqq", "--nbits", "3", "--group", "8",
          "--residual", "16", "--max-cache-len", "40"},
         [](S& s) {
             s.preset = "gemma3";
             s.cache = {config::CacheKind::Quantized, config::QuantizerBackend::Hqq, 3, 8, 16, 40};
         }},
        {{"--cache", "llamacpp", "--cache-type-k", "q8_0", "--cache-type-v", "iq4_nl", "--attn-rotation", "off"},
         [](S& s) {
             s.cache.kind = config::CacheKind::LlamaCpp;
             s.cache.typeK = "q8_0";
             s.cache.typeV = "iq4_nl";
             s.cache.attnRotation = false;
         }},
        {{"--config", "c.json", "--tokenizer", "/models/tok", "--weight-seed", "5"},
         [](S& s) {
             s.configPath = "c.json";
             s.tokenizerPath = "/models/tok";
             s.weightSeed = 5;
         }},
        {{"--checkpoint", "/models/m", "--device", "cuda", "--threads", "3", "--tokens", "7"},
         [](S& s) {
             s.checkpointDir = "/models/m";
             s.device = config::ComputeDevice::Cuda;
             s.threads = 3;
             s.tokens = 7;
         }},
        {{"--prompt", "Once upon", "--ignore-eos", "--beams", "2", "--seed", "9", "--temperature", "0.8",
          "--top-k", "5"},
         [](S& s) {
             s.prompt = "Once upon";
             s.ignoreEos = true;
             s.beams = 2;
             s.seed = 9;
             s.temperature = 0.8;
             s.topK = 5;
         }},
        {{"--prompt-file", promptFile}, [](S& s) { s.prompt = "from a file"; }},
        {{"--prompt-lookup-num-tokens", "3"}, [](S& s) { s.promptLookupNumTokens = 3; }},
        {{"--assistant-model", "draft.gguf"}, [](S& s) { s.assistantModel = "draft.gguf"; }},
        {{"--num-assistant-tokens", "7"}, [](S& s) { s.numAssistantTokens = 7; }},
        {{"--model", "smollm2", "--chat", "--gguf-weights", "float32"},
         [](S& s) {
             s.modelFile = "smollm2";
             s.chat = true;
             s.ggufWeights = kvscope::config::GgufWeights::Float32;
         }},
        {{"--press", "snapkv", "--ratio", "0.5", "--press-option", "window_size=4", "--press-option",
          "kernel_size=3"},
         [](S& s) {
             s.press = {"snapkv", 0.5, {{"window_size", "4"}, {"kernel_size", "3"}}};
         }},
        // Table order: --interval after --press-option, whatever the order on the line.
        {{"--interval", "5", "--press", "decoding", "--press-option", "compression_interval=3",
          "--target-size", "64"},
         [](S& s) {
             s.press = {"decoding", 0.0, {{"compression_interval", "5"}, {"target_size", "64"}}};
         }},
        // A single-valued option given twice: the last one counts in both.
        {{"--tokens", "3", "--tokens", "4"}, [](S& s) { s.tokens = 4; }},
    };
    std::set<std::string> covered;
    for (const Case& c : cases) {
        std::string line;
        for (const std::string& argument : c.arguments) {
            line += argument + " ";
            if (argument.rfind("--", 0) == 0) {
                covered.insert(argument.substr(2));
            }
        }
        SCOPED_TRACE(line);
        const config::RunSettings expected = changed(c.expected);
        const Parsed qt = throughQt(c.arguments);
        const Parsed cli = throughCli(c.arguments);
        ASSERT_TRUE(std::holds_alternative<config::RunSettings>(qt)) << std::get<std::string>(qt);
        ASSERT_TRUE(std::holds_alternative<config::RunSettings>(cli)) << std::get<std::string>(cli);
        EXPECT_EQ(std::get<config::RunSettings>(qt), expected);
        EXPECT_EQ(std::get<config::RunSettings>(cli), expected);
    }
    for (const config::RunOption& option : config::RunOptionTable::options()) {
        EXPECT_TRUE(covered.count(option.name)) << "--" << option.name << " has no case";
    }
}

TEST(QtRunOptionsTest, BothCommandLinesRefuseInTheSameWords) {
    const struct {
        std::vector<std::string> arguments;
        const char* refusal;
    } cases[] = {
        {{"--tokens", "0"}, "--tokens: must be a whole number at least 1, got `0`"},
        {{"--residual", "-1"}, "--residual: must be a whole number at least 1, got `-1`"},
        {{"--threads", "many"}, "--threads: must be a whole number at least 0, got `many`"},
        {{"--temperature", "-1"}, "--temperature: must be a number at least 0, got `-1`"},
        {{"--ratio", "half"}, "--ratio: must be a number in [0, 1), got `half`"},
        {{"--cache", "paged"},
         "--cache: unknown value `paged` (allowed: dynamic, static, quantized, offloaded, llamacpp)"},
        {{"--press-option", "window"}, "--press-option: expected key=value, got `window`"},
        {{"--preset", "llama", "--checkpoint", "/m"},
         "--preset excludes --checkpoint: give one model source: a preset, a config.json, a checkpoint "
         "folder or a GGUF model file"},
        {{"--prompt", "a", "--prompt-file", "/no/such/file"},
         "--prompt-file excludes --prompt: give the prompt as text or as a file, not both"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.refusal);
        const Parsed qt = throughQt(c.arguments);
        const Parsed cli = throughCli(c.arguments);
        ASSERT_TRUE(std::holds_alternative<std::string>(qt));
        ASSERT_TRUE(std::holds_alternative<std::string>(cli));
        EXPECT_EQ(std::get<std::string>(qt), c.refusal);
        EXPECT_EQ(std::get<std::string>(cli), c.refusal);
    }
}

TEST(QtRunOptionsTest, BothHelpTextsListEveryOptionWithTheSettingsDefault) {
    QCommandLineParser parser;
    QtRunOptions::addTo(parser, config::RunSettings{});
    // Qt wraps descriptions at spaces: compare with the white space folded.
    const QString qtHelp = parser.helpText().simplified();
    CLI::App app;
    config::RunSettings settings;
    cli::CliRunOptions::addTo(app, settings, config::RunOptionTable::allGroups());
    const std::string cliHelp = app.help();
    for (const config::RunOption& option : config::RunOptionTable::options()) {
        SCOPED_TRACE(option.name);
        const std::string flag = "--" + option.name;
        const std::string current = option.current(config::RunSettings{});
        const std::string qtForm = option.valueName.empty() ? flag : flag + " <" + option.valueName + ">";
        const std::string cliForm = option.valueName.empty() ? flag
                                    : current.empty()        ? flag + " " + option.valueName
                                                             : flag + " " + option.valueName + "=" + current;
        const std::string qtDescribed = option.help + (current.empty() ? "" : " [default: " + current + "]");
        EXPECT_TRUE(qtHelp.contains(QString::fromStdString(qtForm + " " + qtDescribed)))
            << qtForm << " " << qtDescribed << " in\n"
            << qtHelp.toStdString();
        EXPECT_NE(cliHelp.find(cliForm), std::string::npos) << cliForm << " in\n" << cliHelp;
        EXPECT_NE(cliHelp.find(option.help), std::string::npos) << option.help;
    }
}

/// The serving table (paged::ServingOptionTable) through kvscope's parser and kvscope-cli serve's adapter.
Parsed servingThrough(bool qt, const std::vector<std::string>& arguments) {
    const auto& table = paged::ServingOptionTable::options();
    config::RunSettings settings;
    if (qt) {
        QCommandLineParser parser;
        QtRunOptions::addTo(parser, config::RunSettings{}, table);
        QStringList line{QStringLiteral("kvscope")};
        for (const std::string& argument : arguments) {
            line << QString::fromStdString(argument);
        }
        if (!parser.parse(line)) {
            return parser.errorText().toStdString();
        }
        if (const QString refusal = QtRunOptions::apply(parser, settings, table); !refusal.isEmpty()) {
            return refusal.toStdString();
        }
        return settings;
    }
    CLI::App app;
    cli::CliRunOptions::addOptions(app, settings, table);
    std::vector<const char*> argv{"kvscope-cli"};
    for (const std::string& argument : arguments) {
        argv.push_back(argument.c_str());
    }
    try {
        app.parse(static_cast<int>(argv.size()), argv.data());
    } catch (const CLI::ParseError& error) {
        return std::string(error.what());
    }
    return settings;
}

// kvscope --workload and kvscope-cli serve read the serving options from one table: the same settings and
// the same refusals, --free-policy read by paged::freePolicyFromString.
TEST(QtRunOptionsTest, TheServingOptionsParseAndRefuseAlikeThroughBothCommandLines) {
    const std::vector<std::string> all = {"--workload",
                                          "chat-shared-system-prompt",
                                          "--block-size",
                                          "4",
                                          "--num-blocks",
                                          "24",
                                          "--max-num-batched-tokens",
                                          "32",
                                          "--max-num-seqs",
                                          "3",
                                          "--no-prefix-caching",
                                          "--free-policy",
                                          "current"};
    for (const bool qt : {true, false}) {
        const Parsed parsed = servingThrough(qt, all);
        ASSERT_TRUE(std::holds_alternative<config::RunSettings>(parsed)) << std::get<std::string>(parsed);
        const config::RunSettings& settings = std::get<config::RunSettings>(parsed);
        ASSERT_TRUE(settings.serving.has_value());
        EXPECT_EQ(*settings.serving,
                  (config::ServingSettings{"chat-shared-system-prompt", 4, 24, 32, 3, false, "current"}));
        EXPECT_FALSE(std::get<config::RunSettings>(servingThrough(qt, {})).serving.has_value())
            << "no serving option, no serving run";
    }
    struct Case {
        std::vector<std::string> arguments;
        const char* refusal;
    };
    const Case cases[] = {
        {{"--free-policy", "lru"}, "--free-policy: unknown value `lru` (allowed: document, current)"},
        {{"--block-size", "0"}, "--block-size: must be a whole number at least 1, got `0`"},
        {{"--max-num-seqs", "x"}, "--max-num-seqs: must be a whole number at least 1, got `x`"},
    };
    for (const Case& c : cases) {
        EXPECT_EQ(std::get<std::string>(servingThrough(true, c.arguments)), c.refusal);
        EXPECT_EQ(std::get<std::string>(servingThrough(false, c.arguments)), c.refusal);
    }
}

} // namespace
} // namespace kvscope::gui
