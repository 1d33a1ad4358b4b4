// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/config/RunSettings.h"

#include "kvscope/config/ConfigError.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace kvscope::config {
namespace {

/// The message `settings` are refused with, or "" when validate accepts them.
std::string refusal(const RunSettings& settings) {
    try {
        validate(settings);
    } catch (const ConfigError& error) {
        return error.what();
    }
    return {};
}

RunSettings changed(const std::function<void(RunSettings&)>& change) {
    RunSettings settings;
    change(settings);
    return settings;
}

TEST(RunSettingsTest, NameTablesRoundTripEveryValue) {
    for (int value = 0; value <= static_cast<int>(CacheKind::Last); ++value) {
        const auto kind = static_cast<CacheKind>(value);
        EXPECT_EQ(cacheKindFromString(toString(kind)), kind) << value;
    }
    for (int value = 0; value <= static_cast<int>(QuantizerBackend::Last); ++value) {
        const auto backend = static_cast<QuantizerBackend>(value);
        EXPECT_EQ(quantizerBackendFromString(toString(backend)), backend) << value;
    }
    for (int value = 0; value <= static_cast<int>(ComputeDevice::Last); ++value) {
        const auto device = static_cast<ComputeDevice>(value);
        EXPECT_EQ(computeDeviceFromString(toString(device)), device) << value;
    }
}

TEST(RunSettingsTest, NamesAreTheOnesUsersType) {
    EXPECT_EQ(cacheKindNames(), (std::vector<std::string>{"dynamic", "static", "quantized", "offloaded", "llamacpp"}));
    EXPECT_EQ(allowedCacheKinds(), "dynamic, static, quantized, offloaded, llamacpp");
    EXPECT_EQ(quantizerBackendNames(), (std::vector<std::string>{"min-max", "hqq"}));
    EXPECT_EQ(quantizerBackendFromString("quanto"), QuantizerBackend::MinMax) << "quanto is min-max's alias";
    EXPECT_EQ(toString(QuantizerBackend::MinMax), "min-max") << "an alias is never printed";
    EXPECT_EQ(allowedQuantizerBackends(), "min-max, quanto (= min-max), hqq");
    EXPECT_EQ(computeDeviceNames(), (std::vector<std::string>{"cpu", "cuda"}));
}

TEST(RunSettingsTest, UnknownNamesAreNotGuessed) {
    EXPECT_EQ(cacheKindFromString("Dynamic"), std::nullopt);
    EXPECT_EQ(cacheKindFromString(""), std::nullopt);
    EXPECT_EQ(quantizerBackendFromString("HQQ"), std::nullopt);
    EXPECT_EQ(quantizerBackendFromString("int4"), std::nullopt);
    EXPECT_EQ(computeDeviceFromString("tpu"), std::nullopt);
}

TEST(RunSettingsTest, DefaultsAreValid) { EXPECT_EQ(refusal(RunSettings{}), ""); }

TEST(RunSettingsTest, RefusalsNameTheSettingAndWhatIsAllowed) {
    struct Case {
        const char* what;
        std::function<void(RunSettings&)> change;
        const char* message;
    };
    const Case cases[] = {
        {"two sources", [](RunSettings& s) { s.preset = "llama"; s.checkpointDir = "/x"; }, "give one model source"},
        {"checkpoint and tokenizer",
         [](RunSettings& s) { s.checkpointDir = "/x"; s.tokenizerPath = "/t"; },
         "a tokenizer pairs with a preset or a config.json; a checkpoint folder brings its own"},
        {"zero tokens", [](RunSettings& s) { s.tokens = 0; }, "tokens must be at least 1, got 0"},
        {"zero beams", [](RunSettings& s) { s.beams = 0; }, "beams must be at least 1, got 0"},
        {"negative top-k", [](RunSettings& s) { s.topK = -1; }, "top-k must be at least 0, got -1"},
        {"negative temperature", [](RunSettings& s) { s.temperature = -0.5; }, "temperature must be at least 0"},
        {"negative group", [](RunSettings& s) { s.cache.groupSize = -4; }, "group size must be at least 0, got -4"},
        {"no residual", [](RunSettings& s) { s.cache.residualLength = 0; }, "residual length must be at least 1"},
        {"negative length", [](RunSettings& s) { s.cache.maxCacheLen = -1; }, "max cache length must be at least 0"},
        {"negative threads", [](RunSettings& s) { s.threads = -2; }, "threads must be at least 0, got -2"},
        {"no assistant tokens", [](RunSettings& s) { s.numAssistantTokens = 0; },
         "num-assistant-tokens must be at least 1, got 0"},
        {"two sources of drafts",
         [](RunSettings& s) { s.assistantModel = "draft.gguf"; s.promptLookupNumTokens = 3; },
         "give one source of drafts: --assistant-model or --prompt-lookup-num-tokens, not both"},
        {"3-bit min-max",
         [](RunSettings& s) { s.cache.kind = CacheKind::Quantized; s.cache.nbits = 3; },
         "nbits 3 is not supported by the min-max quantizer (allowed: 2, 4, 8)"},
        {"5-bit hqq",
         [](RunSettings& s) {
             s.cache.kind = CacheKind::Quantized;
             s.cache.backend = QuantizerBackend::Hqq;
             s.cache.nbits = 5;
         },
         "nbits 5 is not supported by the hqq quantizer (allowed: 1, 2, 3, 4, 8)"},
        {"q3_k K", [](RunSettings& s) { s.cache.typeK = "q3_k"; },
         "--cache-type-k `q3_k` is not a type llama.cpp's cache takes (allowed: f32, f16, bf16, q8_0, q4_0, q4_1, "
         "iq4_nl, q5_0, q5_1)"},
        {"Q8_0 V", [](RunSettings& s) { s.cache.typeV = "Q8_0"; }, "--cache-type-v `Q8_0` is not a type"},
    };
    for (const Case& c : cases) {
        const std::string message = refusal(changed(c.change));
        EXPECT_NE(message.find(c.message), std::string::npos) << c.what << ": " << message;
    }
}

TEST(RunSettingsTest, ATokenizerPairsWithAPresetOrAConfig) {
    EXPECT_EQ(refusal(changed([](RunSettings& s) { s.tokenizerPath = "/t"; })), "") << "the default preset";
    EXPECT_EQ(refusal(changed([](RunSettings& s) { s.preset = "llama"; s.tokenizerPath = "/t"; })), "");
    EXPECT_EQ(refusal(changed([](RunSettings& s) { s.configPath = "/c.json"; s.tokenizerPath = "/t"; })), "");
}

TEST(RunSettingsTest, BitWidthsMatterOnlyForQuantizedCaches) {
    EXPECT_EQ(refusal(changed([](RunSettings& s) { s.cache.nbits = 3; })), "") << "a dynamic cache ignores nbits";
    EXPECT_EQ(refusal(changed([](RunSettings& s) {
                  s.cache.kind = CacheKind::Quantized;
                  s.cache.backend = QuantizerBackend::Hqq;
                  s.cache.nbits = 3;
              })),
              "");
}

TEST(RunSettingsTest, PressesAreCheckedWithoutBuildingThem) {
    const auto press = [](std::string name, double ratio, std::map<std::string, std::string> options) {
        return changed([&](RunSettings& s) { s.press = PressSettings{name, ratio, options}; });
    };
    EXPECT_EQ(refusal(press("snapkv", 0.5, {{"window_size", "8"}})), "");
    EXPECT_EQ(refusal(press("decoding", 0.0, {{"base", "tova"}, {"compression_interval", "4"}, {"target_size", "16"}})), "");
    EXPECT_EQ(refusal(press("adakv", 0.3, {{"base", "snapkv"}, {"window_size", "4"}, {"alpha_safeguard", "0.1"}})), "")
        << "a wrapper takes its base press's options";
    struct Case {
        const char* what;
        RunSettings settings;
        const char* message;
    };
    const Case cases[] = {
        {"unknown press", press("snap", 0.5, {}), "unknown press `snap` (allowed: streaming_llm, knorm, snapkv"},
        {"ratio 1", press("knorm", 1.0, {}), "press ratio must be in [0, 1), got 1"},
        {"negative ratio", press("knorm", -0.1, {}), "press ratio must be in [0, 1)"},
        {"ratio without a press", press("", 0.5, {}), "a press ratio or press options need a press (allowed:"},
        {"unknown option", press("snapkv", 0.5, {{"window", "8"}}),
         "press snapkv has no option `window` (allowed: window_size, kernel_size)"},
        {"not an integer", press("snapkv", 0.5, {{"window_size", "eight"}}), "window_size=eight: expected an integer"},
        {"not a flag", press("expected_attention", 0.5, {{"use_vnorm", "maybe"}}), "expected true or false"},
        {"base not a scorer", press("decoding", 0.0, {{"base", "h2o"}}), "base=h2o: expected a scorer press (streaming_llm"},
        {"base's unknown option", press("decoding", 0.0, {{"base", "tova"}, {"window_size", "4"}}),
         "press tova has no option `window_size` (allowed: none)"},
    };
    for (const Case& c : cases) {
        const std::string message = refusal(c.settings);
        EXPECT_NE(message.find(c.message), std::string::npos) << c.what << ": " << message;
    }
}

TEST(RunSettingsTest, ThePressEntryOfASessionReadsBack) {
    const PressSettings press{"decoding", 0.0, {{"base", "knorm"}, {"target_size", "16"}}};
    const std::string cacheSettings = "{\"kind\": \"dynamic\", \"press\": " + press.toJson().dump() + "}";
    EXPECT_EQ(PressSettings::fromCacheSettings(cacheSettings), press);
    EXPECT_FALSE(press.toJson().contains("fitted")) << "kvscope-cli run's sessions are as before";
    // The inspector's fitted defaults read back too.
    const PressSettings fitted{"snapkv", 0.5, {{"window_size", "8"}}, {{"window_size", "64"}}};
    EXPECT_EQ(fitted.toJson().at("fitted"), nlohmann::json({{"window_size", "64"}}));
    EXPECT_EQ(PressSettings::fromCacheSettings("{\"press\": " + fitted.toJson().dump() + "}"), fitted);
    EXPECT_EQ(PressSettings::fromCacheSettings("{\"kind\": \"dynamic\"}"), std::nullopt);
    EXPECT_EQ(PressSettings::fromCacheSettings("{\"press\": {\"ratio\": 0.5}}"), std::nullopt) << "no name";
    EXPECT_EQ(PressSettings::fromCacheSettings("not json"), std::nullopt);
}

} // namespace
} // namespace kvscope::config
