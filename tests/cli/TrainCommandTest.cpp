// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cli/TrainCommand.h"

#include "kvscope/model/LanguageModel.h"
#include "kvscope/model/ModelLoader.h"
#include "kvscope/model/SafetensorsFile.h"

#include "ModelTestHelpers.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <iostream>
#include <sstream>

using kvscope::cli::TrainCommand;
using kvscope::cli::TrainOptions;

namespace {

/// Options for a few quick steps of the llama preset on a small corpus in `directory`.
TrainOptions quickInTrainCommand(const std::filesystem::path& directory) {
    std::ofstream corpus(directory / "corpus.txt");
    for (int line = 0; line < 100; ++line) {
        corpus << "a fortune a day keeps the doctor away, said line " << line << "\n";
    }
    TrainOptions options;
    options.preset = "llama";
    options.corpus = (directory / "corpus.txt").string();
    options.out = (directory / "llama.safetensors").string();
    options.training.steps = 4;
    options.training.batch = 2;
    options.training.sequenceLength = 16;
    options.training.evaluateEvery = 2;
    options.training.heldOutWindows = 4;
    return options;
}

} // namespace

TEST(TrainCommandTest, WritesWeightsThePresetLoaderReadsWithTheirRecord) {
    kvscope::testing::TemporaryDirectory directory("kvscope-train");
    const TrainOptions options = quickInTrainCommand(directory.path());
    std::ostringstream progress;
    const nlohmann::json summary = TrainCommand::run(options, progress, nullptr);
    EXPECT_EQ(summary.at("steps"), 4);
    EXPECT_FALSE(summary.at("interrupted").get<bool>());
    EXPECT_EQ(summary.at("evaluations").size(), 2u);
    EXPECT_NE(progress.str().find("4/4 steps"), std::string::npos) << progress.str();
    EXPECT_NE(progress.str().find("held-out"), std::string::npos) << progress.str();

    const kvscope::model::SafetensorsFile file(options.out);
    EXPECT_EQ(file.dtypeName("lm_head.weight"), "F16");
    EXPECT_EQ(file.metadata().at("kvscope_preset"), "llama");
    EXPECT_EQ(file.metadata().at("kvscope_steps"), "4");
    const auto model = kvscope::model::ModelLoader::fromWeightsFile(kvscope::testing::presetConfig("llama"), options.out);
    EXPECT_EQ(summary.at("parameters"), model->parameters().parameterCount());
    // f16 rounds the weights by about 1e-3 of their size: the held-out loss barely moves.
    EXPECT_NEAR(summary.at("held_out_bits_per_byte_as_written").get<double>(),
                summary.at("held_out_bits_per_byte").get<double>(), 0.01);
}

TEST(TrainCommandTest, AnInterruptStillWritesTheLastFinishedStep) {
    kvscope::testing::TemporaryDirectory directory("kvscope-train");
    TrainOptions options = quickInTrainCommand(directory.path());
    options.progress = false;
    const std::atomic<bool> stop{true};
    const nlohmann::json summary = TrainCommand::run(options, std::cerr, &stop);
    EXPECT_TRUE(summary.at("interrupted").get<bool>());
    EXPECT_EQ(summary.at("steps"), 0);
    EXPECT_TRUE(std::filesystem::exists(options.out));
}

TEST(TrainCommandTest, RefusesAWeightDtypeItCannotWrite) {
    kvscope::testing::TemporaryDirectory directory("kvscope-train");
    TrainOptions options = quickInTrainCommand(directory.path());
    options.dtype = "f8";
    try {
        TrainCommand::run(options, std::cerr, nullptr);
        FAIL() << "f8 was accepted";
    } catch (const std::exception& error) {
        EXPECT_NE(std::string(error.what()).find("allowed: f16, bf16, f32"), std::string::npos) << error.what();
    }
    EXPECT_FALSE(std::filesystem::exists(options.out));
}
