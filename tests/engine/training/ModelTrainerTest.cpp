// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/config/ModelConfig.h"
#include "kvscope/model/LanguageModel.h"
#include "kvscope/model/ModelLoader.h"
#include "kvscope/model/SafetensorsWriter.h"
#include "kvscope/training/ModelTrainer.h"
#include "kvscope/training/TextCorpus.h"
#include "kvscope/training/TrainingError.h"

#include "ModelTestHelpers.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <cmath>

using kvscope::model::ModelLoader;
using kvscope::training::ModelTrainer;
using kvscope::training::TextCorpus;
using kvscope::training::TrainingError;
using kvscope::training::TrainingOptions;
using kvscope::training::TrainingStep;

namespace {

/// A corpus a tiny model learns within a few dozen steps: one phrase over and over.
TextCorpus repetitiveCorpus() {
    std::string text;
    for (int copy = 0; copy < 200; ++copy) {
        text += "the cat sat on the mat. ";
    }
    return TextCorpus(text, text.substr(0, 600));
}

TrainingOptions quickOptions() {
    TrainingOptions options;
    options.steps = 30;
    options.batch = 4;
    options.sequenceLength = 24;
    options.learningRate = 1e-2;
    options.warmupSteps = 5;
    options.evaluateEvery = 15;
    options.heldOutWindows = 8;
    options.seed = 1;
    return options;
}

at::Tensor logitsOf(kvscope::model::LanguageModel& model) {
    return model.forward(at::arange(10, at::kLong).view({1, 10}), nullptr);
}

} // namespace

TEST(ModelTrainerTest, TrainingLowersTheHeldOutLossAndReportsEverySteps) {
    at::set_num_threads(1);
    const auto config = kvscope::testing::presetConfig("llama");
    const TextCorpus corpus = repetitiveCorpus();
    const auto untrained = ModelLoader::builtin(config, 1);
    const double before = ModelTrainer::heldOutBitsPerByte(*untrained, corpus, 24, 8);

    ModelTrainer trainer(config, quickOptions());
    std::vector<TrainingStep> steps;
    const auto result = trainer.train(corpus, [&](const TrainingStep& step) { steps.push_back(step); });
    EXPECT_EQ(result.steps, 30);
    EXPECT_FALSE(result.interrupted);
    EXPECT_FALSE(result.diverged);
    ASSERT_EQ(steps.size(), 30u);
    EXPECT_EQ(steps.front().step, 1);
    EXPECT_TRUE(steps[14].heldOutBitsPerByte.has_value());
    EXPECT_FALSE(steps[15].heldOutBitsPerByte.has_value());
    EXPECT_TRUE(steps.back().heldOutBitsPerByte.has_value());
    EXPECT_GT(before, 4.0);  // random weights spread their guesses over 259 tokens
    EXPECT_LT(result.heldOutBitsPerByte, 0.5 * before) << "before " << before;
    EXPECT_LT(steps.back().loss, steps.front().loss);

    // The trained weights are a model of their own, through the same loader as any checkpoint.
    const auto trained = ModelLoader::fromParameters(config, trainer.parameters());
    EXPECT_NEAR(ModelTrainer::heldOutBitsPerByte(*trained, corpus, 24, 8), result.heldOutBitsPerByte, 1e-5);
    EXPECT_FALSE(trained->trainable());
}

TEST(ModelTrainerTest, OneSeedOneThreadGivesTheSameWeights) {
    at::set_num_threads(1);
    const auto config = kvscope::testing::presetConfig("mistral");
    TrainingOptions options = quickOptions();
    options.steps = 5;
    const TextCorpus corpus = repetitiveCorpus();
    ModelTrainer first(config, options);
    first.train(corpus, nullptr);
    ModelTrainer second(config, options);
    second.train(corpus, nullptr);
    const auto firstWeights = first.parameters();
    const auto secondWeights = second.parameters();
    for (const auto& [name, tensor] : firstWeights.tensors()) {
        EXPECT_TRUE(at::equal(tensor, secondWeights.get(name))) << name;
    }
    options.seed = 2;
    ModelTrainer other(config, options);
    other.train(corpus, nullptr);
    EXPECT_FALSE(at::equal(other.parameters().get("lm_head.weight"), first.parameters().get("lm_head.weight")));
}

TEST(ModelTrainerTest, AStopRequestKeepsTheWeightsOfTheLastFinishedStep) {
    const auto config = kvscope::testing::presetConfig("llama");
    TrainingOptions options = quickOptions();
    std::atomic<bool> stop{false};
    ModelTrainer trainer(config, options);
    const auto result = trainer.train(
        repetitiveCorpus(), [&](const TrainingStep& step) { stop.store(step.step == 3); }, &stop);
    EXPECT_TRUE(result.interrupted);
    EXPECT_EQ(result.steps, 3);
    EXPECT_TRUE(std::isfinite(result.heldOutBitsPerByte));

    // Stopped before the first step: the built-in weights of the seed, unchanged.
    stop.store(true);
    ModelTrainer untouched(config, options);
    EXPECT_EQ(untouched.train(repetitiveCorpus(), nullptr, &stop).steps, 0);
    const auto builtin = ModelLoader::builtin(config, options.seed);
    const auto kept = ModelLoader::fromParameters(config, untouched.parameters());
    EXPECT_TRUE(at::equal(logitsOf(*kept), logitsOf(*builtin)));
}

TEST(ModelTrainerTest, TheLearningRateWarmsUpThenFollowsACosineToItsFloor) {
    TrainingOptions options;
    options.steps = 110;
    options.warmupSteps = 10;
    options.learningRate = 1e-3;
    options.finalLearningRateFraction = 0.1;
    EXPECT_DOUBLE_EQ(ModelTrainer::learningRateAt(1, options), 1e-4);
    EXPECT_DOUBLE_EQ(ModelTrainer::learningRateAt(10, options), 1e-3);
    EXPECT_NEAR(ModelTrainer::learningRateAt(60, options), 0.55e-3, 1e-12); // half way: the mean of peak and floor
    EXPECT_NEAR(ModelTrainer::learningRateAt(110, options), 1e-4, 1e-12);
    for (int64_t step = 11; step < 110; ++step) {
        EXPECT_LT(ModelTrainer::learningRateAt(step + 1, options), ModelTrainer::learningRateAt(step, options));
    }
}

TEST(ModelTrainerTest, RefusesEncoderDecodersAndBadOptions) {
    try {
        ModelTrainer(kvscope::testing::presetConfig("whisper"), TrainingOptions{});
        FAIL() << "an encoder-decoder was accepted";
    } catch (const TrainingError& error) {
        EXPECT_NE(std::string(error.what()).find("encoder-decoder"), std::string::npos) << error.what();
    }
    TrainingOptions options;
    options.batch = 0;
    try {
        ModelTrainer(kvscope::testing::presetConfig("llama"), options);
        FAIL() << "a batch of 0 was accepted";
    } catch (const TrainingError& error) {
        EXPECT_NE(std::string(error.what()).find("--batch must be at least 1"), std::string::npos) << error.what();
    }
}

TEST(ModelTrainerTest, AWarmStartCopiesTheTensorsOfTheSameNameAndShape) {
    kvscope::testing::TemporaryDirectory directory("kvscope-trainer");
    const auto llama = kvscope::testing::presetConfig("llama");
    TrainingOptions options = quickOptions();
    options.steps = 3;
    ModelTrainer first(llama, options);
    first.train(repetitiveCorpus(), nullptr);
    first.save(directory.path() / "llama.safetensors", at::kFloat, {});

    // mistral has llama's tensors (only its attention window differs): every tensor is copied.
    options.initialWeights = directory.path() / "llama.safetensors";
    const ModelTrainer mistral(kvscope::testing::presetConfig("mistral"), options);
    const auto trained = first.parameters();
    EXPECT_EQ(mistral.initializedTensors(), static_cast<int64_t>(trained.tensors().size()));
    for (const auto& [name, tensor] : trained.tensors()) {
        EXPECT_TRUE(at::equal(mistral.parameters().get(name), tensor)) << name;
    }
    // gemma3 scales its norms by 1 + w: the offset keeps a copied norm's effect.
    options.normWeightOffset = -1.0;
    const ModelTrainer gemma(kvscope::testing::presetConfig("gemma3"), options);
    EXPECT_GT(gemma.initializedTensors(), 0);
    EXPECT_TRUE(at::allclose(gemma.parameters().get("model.norm.weight") + 1.0, first.parameters().get("model.norm.weight")));
    EXPECT_TRUE(at::equal(gemma.parameters().get("model.layers.0.mlp.up_proj.weight"),
                          first.parameters().get("model.layers.0.mlp.up_proj.weight")));

    kvscope::model::SafetensorsWriter::writeFile(directory.path() / "unrelated.safetensors",
                                                 {{"encoder.conv1.weight", at::zeros({2, 2})}}, at::kFloat);
    options.initialWeights = directory.path() / "unrelated.safetensors";
    try {
        ModelTrainer(llama, options);
        FAIL() << "weights sharing no tensor were accepted";
    } catch (const TrainingError& error) {
        EXPECT_NE(std::string(error.what()).find("share no tensor"), std::string::npos) << error.what();
    }
}
