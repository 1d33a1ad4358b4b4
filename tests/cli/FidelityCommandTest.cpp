// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cli/FidelityCommand.h"

#include "kvscope/config/ConfigError.h"
#include "kvscope/runtime/GenerationError.h"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <utility>

namespace {

using kvscope::cli::FidelityCommand;
using kvscope::cli::FidelityOptions;

FidelityOptions pressed(const std::string& press, double ratio) {
    FidelityOptions options;
    options.run.run.preset = "llama";
    options.run.run.prompt = "Every token the model reads leaves a key and a value in the cache";
    options.run.run.tokens = 12;
    options.run.run.press.name = press;
    options.run.run.press.ratio = ratio;
    return options;
}

std::string temporary(const std::string& name) {
    return (std::filesystem::temp_directory_path() / ("kvscope-fidelity-command-test-" + name)).string();
}

TEST(FidelityCommandTest, ReportsEveryTokensDivergenceAndAgreement) {
    const nlohmann::json result = FidelityCommand::run(pressed("knorm", 0.5));
    EXPECT_EQ(result["press"], "knorm");
    EXPECT_EQ(result["tokens"], 12);
    ASSERT_EQ(result["kl"].size(), 12u);
    ASSERT_EQ(result["top1_agrees"].size(), 12u);
    double total = 0.0;
    int agreements = 0;
    for (size_t token = 0; token < 12; ++token) {
        total += result["kl"][token].get<double>();
        agreements += result["top1_agrees"][token].get<bool>() ? 1 : 0;
    }
    EXPECT_NEAR(result["mean_kl"].get<double>(), total / 12.0, 1e-12);
    EXPECT_NEAR(result["top1_agreement"].get<double>(), agreements / 12.0, 1e-12);
    EXPECT_EQ(result["compressed_layers"].size(), 4u) << "llama's four full-attention layers";
    EXPECT_FALSE(result["text"].get<std::string>().empty());
}

TEST(FidelityCommandTest, NeedsAPressAndRefusesBadOnes) {
    FidelityOptions none = pressed("", 0.0);
    EXPECT_THROW(FidelityCommand::run(none), kvscope::runtime::GenerationError);
    FidelityOptions unknown = pressed("squeeze", 0.5);
    try {
        FidelityCommand::run(unknown);
        FAIL() << "an unknown press was measured";
    } catch (const kvscope::config::ConfigError& error) {
        EXPECT_NE(std::string(error.what()).find("allowed: "), std::string::npos) << error.what();
    }
}

TEST(FidelityCommandTest, WithoutAPressMeasuresACacheAgainstTheDynamicOne) {
    // llama.cpp quantises heads of whole blocks (32 values) and rotates heads of 64: a llama config with heads of
    // 64 (the presets' are 16), built-in weights.
    const std::string config = temporary("head64.json");
    std::ofstream(config) << R"({"model_type": "llama", "hidden_size": 128, "intermediate_size": 256,
        "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 64,
        "vocab_size": 259, "bos_token_id": 256, "eos_token_id": 257, "initializer_range": 0.5})";
    const auto llamaCpp = [&](const char* typeK, const char* typeV, bool rotation) {
        FidelityOptions options = pressed("", 0.0);
        options.run.run.preset.clear();
        options.run.run.configPath = config;
        options.run.run.cache.kind = kvscope::config::CacheKind::LlamaCpp;
        options.run.run.cache.typeK = typeK;
        options.run.run.cache.typeV = typeV;
        options.run.run.cache.attnRotation = rotation;
        return FidelityCommand::run(options);
    };
    // f32 keys and values are what the dynamic cache holds: not a bit moves.
    const nlohmann::json exact = llamaCpp("f32", "f32", true);
    EXPECT_EQ(exact["cache"]["kind"], "llamacpp");
    EXPECT_EQ(exact["against"]["kind"], "dynamic");
    EXPECT_EQ(exact["mean_kl"].get<double>(), 0.0);
    EXPECT_EQ(exact["top1_agreement"].get<double>(), 1.0);
    // q4_0 moves the distributions, q8_0 less; the rotation changes by how much.
    const nlohmann::json q4 = llamaCpp("q4_0", "q4_0", true);
    EXPECT_GT(q4["mean_kl"].get<double>(), 0.0);
    EXPECT_EQ(q4["cache"]["type_k"], "q4_0");
    EXPECT_EQ(q4["cache"]["attn_rotation"], true);
    EXPECT_NE(q4["kl"], llamaCpp("q4_0", "q4_0", false)["kl"]);
    EXPECT_LT(llamaCpp("q8_0", "q8_0", true)["mean_kl"].get<double>(), q4["mean_kl"].get<double>());
    // The presets' heads of 16 are not whole q4_0 blocks: refused, as llama.cpp refuses them.
    FidelityOptions preset = pressed("", 0.0);
    preset.run.run.cache.kind = kvscope::config::CacheKind::LlamaCpp;
    preset.run.run.cache.typeK = "q4_0";
    EXPECT_THROW(FidelityCommand::run(preset), kvscope::runtime::GenerationError);
    std::filesystem::remove(config);
    // The quantized cache too.
    FidelityOptions quanto = pressed("", 0.0);
    quanto.run.run.cache.kind = kvscope::config::CacheKind::Quantized;
    quanto.run.run.cache.nbits = 2;
    quanto.run.run.cache.residualLength = 1;
    EXPECT_GT(FidelityCommand::run(quanto)["mean_kl"].get<double>(), 0.0);
}

TEST(FidelityCommandTest, ASavedReferenceGivesTheSameResultAsNone) {
    const std::string file = temporary("llama.safetensors");
    FidelityOptions save = pressed("", 0.0);
    save.saveReference = file;
    const nlohmann::json saved = FidelityCommand::run(save);
    EXPECT_EQ(saved["tokens"], 12);
    EXPECT_EQ(saved["reference"], file);
    for (const auto& [press, ratio] : {std::pair{"knorm", 0.5}, std::pair{"tova", 0.25}}) {
        const FidelityOptions alone = pressed(press, ratio);
        FidelityOptions shared = alone;
        shared.reference = file;
        EXPECT_EQ(FidelityCommand::run(shared), FidelityCommand::run(alone)) << press;
    }
    // Saving with a press measures it too, as without saving.
    FidelityOptions saveAndMeasure = pressed("knorm", 0.5);
    saveAndMeasure.saveReference = temporary("llama-knorm.safetensors");
    EXPECT_EQ(FidelityCommand::run(saveAndMeasure), FidelityCommand::run(pressed("knorm", 0.5)));
    std::filesystem::remove(saveAndMeasure.saveReference);
    std::filesystem::remove(file);
}

TEST(FidelityCommandTest, RefusesAReferenceMadeForAnotherPromptModelOrLength) {
    const std::string file = temporary("refused.safetensors");
    FidelityOptions save = pressed("", 0.0);
    save.saveReference = file;
    FidelityCommand::run(save);
    const auto refusal = [&](FidelityOptions options) -> std::string {
        options.reference = file;
        try {
            FidelityCommand::run(options);
        } catch (const kvscope::runtime::GenerationError& error) {
            return error.what();
        }
        return "measured";
    };
    FidelityOptions otherPrompt = pressed("knorm", 0.5);
    otherPrompt.run.run.prompt = "Another text altogether";
    EXPECT_NE(refusal(otherPrompt).find("was made for another prompt"), std::string::npos)
        << refusal(otherPrompt);
    FidelityOptions otherLength = pressed("knorm", 0.5);
    otherLength.run.run.tokens = 8;
    EXPECT_NE(refusal(otherLength).find("another number of tokens (--tokens 12, not --tokens 8)"),
              std::string::npos)
        << refusal(otherLength);
    FidelityOptions otherPreset = pressed("knorm", 0.5);
    otherPreset.run.run.preset = "mistral";
    EXPECT_NE(refusal(otherPreset).find("was made for another model"), std::string::npos)
        << refusal(otherPreset);
    FidelityOptions otherWeights = pressed("knorm", 0.5);
    otherWeights.run.run.weightSeed = 7; // the preset's random weights instead of its trained ones
    EXPECT_NE(refusal(otherWeights).find("was made for another"), std::string::npos) << refusal(otherWeights);
    std::filesystem::remove(file);
}

} // namespace
