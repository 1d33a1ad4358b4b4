// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/runtime/LiveSession.h"

#include "ModelTestHelpers.h"
#include "TokenizerTestJson.h"
#include "kvscope/trace/RecordingSink.h"
#include "kvscope/trace/Timeline.h"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <variant>
#include <fstream>
#include <stdexcept>
#include <map>
#include <thread>

namespace kvscope::runtime {
namespace {

std::string refusalInLiveSession(const config::RunSettings& settings) {
    return testing::refusal([&] { LiveSession session(settings); });
}

TEST(LiveSessionTest, ListsPresets) {
    const std::vector<std::string> names = LiveSession::presetNames();
    EXPECT_NE(std::find(names.begin(), names.end(), "llama"), names.end());
    EXPECT_EQ(LiveSession::defaultPreset(), "llama");
}

TEST(LiveSessionTest, DescribesTheTokenizerAFolderOrFileBrings) {
    testing::TemporaryDirectory directory("kvscope-describe-tokenizer");
    EXPECT_EQ(LiveSession::describeTokenizer(directory.path().string()).rfind("bytes (the folder brings no", 0), 0u);
    std::ofstream(directory.path() / "tokenizer.json")
        << tokenizer::testing::TokenizerTestJson::byteLevel({"h e", "l l"}).dump();
    EXPECT_EQ(LiveSession::describeTokenizer(directory.path().string()), "BPE tokenizer, 1001 ids (tokenizer.json)");
    EXPECT_EQ(LiveSession::describeTokenizer((directory.path() / "tokenizer.json").string()),
              "BPE tokenizer, 1001 ids (tokenizer.json)");
    std::ofstream(directory.path() / "broken.json") << "{";
    const std::string broken = LiveSession::describeTokenizer((directory.path() / "broken.json").string());
    EXPECT_EQ(broken.rfind("cannot read the tokenizer of ", 0), 0u) << broken;

    // A preset's 259 ids cannot hold the tokenizer's 1001: the live session says both sizes.
    config::RunSettings settings;
    settings.preset = "llama";
    settings.tokenizerPath = directory.path().string();
    EXPECT_NE(refusalInLiveSession(settings).find("1001 ids but the model's vocabulary has 259"), std::string::npos);
}

TEST(LiveSessionTest, ComputesOnTheThreadsItIsGivenOnTheThreadThatBuildsIt) {
    // As the GUI's engine thread builds it: the setting holds on that thread (0 = every core).
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    for (const auto& [threads, expected] : {std::pair<std::int64_t, int>{1, 1}, {3, 3}, {0, cores}}) {
        config::RunSettings settings;
        settings.preset = "llama";
        settings.tokens = 2;
        settings.threads = threads;
        int seen = -1;
        std::thread engine([&] {
            LiveSession session(settings);
            seen = at::get_num_threads();
        });
        engine.join();
        EXPECT_EQ(seen, expected) << "--threads " << threads;
    }
}

TEST(LiveSessionTest, TimesEachStepAndComparesWithACacheFreeRecompute) {
    config::RunSettings settings;
    settings.preset = "llama";
    settings.tokens = 3;
    LiveSession session(settings);
    EXPECT_EQ(session.lastStepSeconds(), 0.0);
    trace::RecordingSink sink;
    session.start(sink);
    EXPECT_GT(session.lastStepSeconds(), 0.0);
    EXPECT_LE(session.recomputeDifference(), 1e-4);
    EXPECT_EQ(session.promptIds().size(), settings.prompt.size() + 1) << "byte tokens after a bos";
    EXPECT_EQ(session.press(), nullptr);
    while (session.step()) {
        EXPECT_GT(session.lastStepSeconds(), 0.0);
        EXPECT_LE(session.recomputeDifference(), 1e-4);
    }
}

TEST(LiveSessionTest, PrefillsThenStepsToTheTokenCount) {
    config::RunSettings settings;
    settings.preset = "gemma3";
    settings.cache.kind = config::CacheKind::Quantized;
    settings.cache.residualLength = 4;
    settings.tokens = 6;
    LiveSession session(settings);
    EXPECT_FALSE(session.started());
    EXPECT_THROW(session.step(), std::runtime_error) << "stepping before start is refused";
    trace::RecordingSink sink;
    session.start(sink);
    EXPECT_TRUE(session.started());
    EXPECT_EQ(session.generatedCount(), 1) << "the prefill picks the first token";
    const std::size_t prefillEvents = sink.size();
    EXPECT_GT(prefillEvents, 0u);
    int steps = 0;
    while (session.step()) {
        ++steps;
    }
    EXPECT_EQ(steps, 5);
    EXPECT_TRUE(session.finished());
    EXPECT_FALSE(session.step());
    EXPECT_EQ(session.generatedCount(), 6);
    EXPECT_THROW(session.start(sink), std::runtime_error);

    trace::Timeline timeline;
    for (const trace::Event& event : sink.events()) {
        timeline.emit(event);
    }
    EXPECT_EQ(timeline.stepCount(), 6);
    EXPECT_EQ(timeline.layerCount(), session.layerCount());
    const bool anyQuantized = std::any_of(sink.events().begin(), sink.events().end(), [](const trace::Event& event) {
        return event.kind() == trace::EventKind::QuantizeFlush;
    });
    EXPECT_TRUE(anyQuantized) << "a residual of 4 flushes within the prompt and 6 tokens";

    const trace::SessionMetadata metadata = session.metadata();
    EXPECT_EQ(metadata.model, "gemma3");
    EXPECT_EQ(metadata.cacheKind, "quantized");
    EXPECT_EQ(metadata.device, "cpu");
    EXPECT_EQ(metadata.prompt, settings.prompt);
    // Each prompt position's text, so a replay shows words without the tokenizer.
    EXPECT_EQ(metadata.tokenizer, "bytes");
    ASSERT_EQ(metadata.promptPieces.size(), settings.prompt.size() + 1);
    EXPECT_EQ(metadata.promptPieces.front(), "<bos>");
    EXPECT_EQ(metadata.promptPieces[1], "T");
    EXPECT_EQ(metadata.promptPieces.back(), "e");
    EXPECT_NE(metadata.modelConfigJson.find("layer_types"), std::string::npos);
    const nlohmann::json cacheSettings = nlohmann::json::parse(metadata.cacheSettingsJson);
    EXPECT_EQ(cacheSettings.value("residual", 0), 4) << metadata.cacheSettingsJson;
    // The record `kvscope-cli run --out` writes: the group size resolved to the head dim, greedy
    // decoding, where the model came from.
    EXPECT_GT(cacheSettings.value("group", 0), 0);
    EXPECT_EQ(cacheSettings.value("temperature", -1.0), 0.0);
    EXPECT_EQ(cacheSettings.value("beams", 0), 1);
    EXPECT_EQ(cacheSettings["source"].value("preset", ""), "gemma3");
    EXPECT_GT(metadata.createdUnixNs, 0);
}

TEST(LiveSessionTest, APressCompressesEveryFullLayerAndIsRecordedInTheMetadata) {
    config::RunSettings settings;
    settings.preset = "gemma2"; // sliding and full layers alternate
    settings.tokens = 2;
    settings.press = config::PressSettings{"knorm", 0.5, {}};
    LiveSession session(settings);
    trace::RecordingSink sink;
    session.start(sink);
    std::vector<trace::CompressionEvent> compressions;
    for (const trace::Event& event : sink.events()) {
        if (const auto* compression = std::get_if<trace::CompressionEvent>(&event.payload)) {
            compressions.push_back(*compression);
            EXPECT_EQ(event.step, 0);
        }
    }
    const auto promptLength = static_cast<std::int32_t>(settings.prompt.size() + 1); // <bos> and a byte each
    ASSERT_EQ(compressions.size(), 2u) << "gemma2's two full layers; the sliding ones are left alone";
    for (const trace::CompressionEvent& compression : compressions) {
        EXPECT_EQ(compression.lengthBefore, promptLength);
        EXPECT_EQ(compression.lengthAfter, promptLength - promptLength / 2);
        EXPECT_EQ(compression.keptScores.size(), static_cast<std::size_t>(compression.keptRecorded));
    }
    EXPECT_EQ(session.pressNotices().size(), 2u);
    const nlohmann::json press = nlohmann::json::parse(session.metadata().cacheSettingsJson).at("press");
    EXPECT_EQ(press, settings.press.toJson());
    EXPECT_EQ(config::PressSettings::fromCacheSettings(session.metadata().cacheSettingsJson), settings.press);

    config::RunSettings unpressed = settings;
    unpressed.press = {};
    LiveSession plain(unpressed);
    EXPECT_FALSE(nlohmann::json::parse(plain.metadata().cacheSettingsJson).contains("press"));
}

// The report's run: gemma3, a 2-bit quantized cache, SnapKV at 0.5 on the default 20-token prompt.
config::RunSettings snapKvOnTheDefaultPrompt() {
    config::RunSettings settings;
    settings.preset = "gemma3";
    settings.cache.kind = config::CacheKind::Quantized;
    settings.cache.nbits = 2;
    settings.cache.residualLength = 8;
    settings.tokens = 2;
    settings.press = config::PressSettings{"snapkv", 0.5, {}};
    return settings;
}

TEST(LiveSessionTest, KvpresssDefaultsRefuseAShortPromptSayingWhyAndHowToFixIt) {
    LiveSession session(snapKvOnTheDefaultPrompt());
    trace::RecordingSink sink;
    EXPECT_EQ(
        testing::refusal([&] { session.start(sink); }),
        "SnapKV's window_size (64) must be shorter than the prompt (20 tokens): give a longer prompt or "
        "--press-option window_size=8");
}

TEST(LiveSessionTest, TheInspectorFitsAPressDefaultToAShortPromptAndRecordsIt) {
    LiveSession session(snapKvOnTheDefaultPrompt(), LiveSession::PressDefaults::FitToPrompt);
    trace::RecordingSink sink;
    session.start(sink);
    EXPECT_TRUE(session.step());
    std::int64_t compressions = 0;
    for (const trace::Event& event : sink.events()) {
        if (const auto* compression = std::get_if<trace::CompressionEvent>(&event.payload)) {
            ++compressions;
            EXPECT_EQ(compression->lengthBefore, 20);
            EXPECT_EQ(compression->lengthAfter, 10);
        }
    }
    EXPECT_GT(compressions, 0);
    ASSERT_FALSE(session.pressNotices().empty());
    EXPECT_EQ(session.pressNotices().front(), "snapkv window_size 8 instead of 64: the prompt has 20 tokens");
    const auto recorded = config::PressSettings::fromCacheSettings(session.metadata().cacheSettingsJson);
    ASSERT_TRUE(recorded.has_value());
    EXPECT_EQ(recorded->options, (std::map<std::string, std::string>{{"window_size", "8"}}));
    EXPECT_EQ(recorded->fitted, (std::map<std::string, std::string>{{"window_size", "64"}}));

    // A window the user gave is theirs: refused, not fitted.
    config::RunSettings given = snapKvOnTheDefaultPrompt();
    given.press.options = {{"window_size", "32"}};
    LiveSession refused(given, LiveSession::PressDefaults::FitToPrompt);
    trace::RecordingSink unused;
    EXPECT_NE(
        testing::refusal([&] { refused.start(unused); }).find("SnapKV's window_size (32) must be shorter"),
        std::string::npos);
}

TEST(LiveSessionTest, HeavyHittersRunWithABudgetAlone) {
    config::RunSettings settings;
    settings.preset = "llama";
    settings.tokens = 6;
    settings.press = config::PressSettings{"h2o", 0.0, {{"budget", "16"}}};
    LiveSession session(settings);
    trace::RecordingSink sink;
    session.start(sink);
    while (session.step()) {
    }
    std::int64_t after = 0;
    for (const trace::Event& event : sink.events()) {
        if (const auto* compression = std::get_if<trace::CompressionEvent>(&event.payload)) {
            after = compression->lengthAfter;
        }
    }
    EXPECT_EQ(after, 16) << "the 20-token prompt grows past the budget and is brought back to it";
}

TEST(LiveSessionTest, ListsThePressesWithTheirOptions) {
    const auto& presses = LiveSession::presses();
    const auto snapkv = std::find_if(presses.begin(), presses.end(), [](const auto& press) { return press.name == "snapkv"; });
    ASSERT_NE(snapkv, presses.end());
    ASSERT_EQ(snapkv->options.size(), 2u);
    EXPECT_EQ(snapkv->options[0].name, "window_size");
    EXPECT_EQ(snapkv->options[0].defaultValue, "64");
}

TEST(LiveSessionTest, NoSourceMeansTheDefaultPreset) {
    config::RunSettings settings;
    settings.tokens = 1;
    LiveSession session(settings);
    EXPECT_EQ(session.metadata().model, "llama");
}

TEST(LiveSessionTest, RefusesBadSettingsNamingWhatIsAllowed) {
    config::RunSettings bits;
    bits.cache.kind = config::CacheKind::Quantized;
    bits.cache.nbits = 3;
    EXPECT_NE(refusalInLiveSession(bits).find("allowed: 2, 4, 8"), std::string::npos) << refusalInLiveSession(bits);
    config::RunSettings two;
    two.preset = "llama";
    two.configPath = "config.json";
    EXPECT_NE(refusalInLiveSession(two).find("one model source"), std::string::npos);
    config::RunSettings tokens;
    tokens.tokens = 0;
    EXPECT_NE(refusalInLiveSession(tokens).find("at least 1"), std::string::npos);
    config::RunSettings press;
    press.press.name = "snapkv";
    press.press.options = {{"window", "4"}};
    EXPECT_NE(refusalInLiveSession(press).find("allowed: window_size, kernel_size"), std::string::npos) << refusalInLiveSession(press);
    press.press = {"h2o", 0.0, {}};
    press.beams = 2;
    EXPECT_NE(refusalInLiveSession(press).find("use beams 1 with --press"), std::string::npos) << refusalInLiveSession(press);
    config::RunSettings preset;
    preset.preset = "gpt9";
    EXPECT_NE(refusalInLiveSession(preset).find("llama"), std::string::npos) << refusalInLiveSession(preset);
    if (!LiveSession::cudaAvailable()) {
        config::RunSettings cuda;
        cuda.device = config::ComputeDevice::Cuda;
        EXPECT_NE(refusalInLiveSession(cuda).find("not available"), std::string::npos) << refusalInLiveSession(cuda);
    }
}

} // namespace
} // namespace kvscope::runtime
