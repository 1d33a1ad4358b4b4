// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cli/FidelityCommand.h"

#include "kvscope/config/ConfigError.h"
#include "kvscope/runtime/GenerationError.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

using kvscope::cli::FidelityCommand;
using kvscope::cli::RunOptions;

RunOptions pressed(const std::string& press, double ratio) {
    RunOptions options;
    options.run.preset = "llama";
    options.run.prompt = "Every token the model reads leaves a key and a value in the cache";
    options.run.tokens = 12;
    options.run.press.name = press;
    options.run.press.ratio = ratio;
    return options;
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
    RunOptions none = pressed("", 0.0);
    EXPECT_THROW(FidelityCommand::run(none), kvscope::runtime::GenerationError);
    RunOptions unknown = pressed("squeeze", 0.5);
    // Refused with the run settings, before a model is loaded.
    EXPECT_THROW(FidelityCommand::run(unknown), kvscope::config::ConfigError);
}

} // namespace
