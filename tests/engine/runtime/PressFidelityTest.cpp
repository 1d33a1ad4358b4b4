// SPDX-License-Identifier: GPL-3.0-or-later
// The press fidelity measurement: the reference is the uncompressed greedy run, the pressed model reads the
// same tokens, and the divergences and top-1 agreements are those of the two distributions of each step.
#include "kvscope/runtime/PressFidelity.h"

#include "kvscope/model/ByteTokenizer.h"
#include "kvscope/model/ModelLoader.h"
#include "kvscope/runtime/GenerationError.h"
#include "kvscope/runtime/Generator.h"

#include "ModelTestHelpers.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace {

using kvscope::runtime::FidelityResult;
using kvscope::runtime::PressFidelity;
using kvscope::config::PressSettings;

const std::vector<int64_t> kPromptInPressFidelity = kvscope::model::ByteTokenizer::encode(
    "The key-value cache holds the keys and values of every token the model has read so far", true);

kvscope::config::CacheSettings dynamicCache() { return {}; }

TEST(PressFidelityTest, ReferenceIsTheUncompressedGreedyRun) {
    auto model = kvscope::model::ModelLoader::builtin(kvscope::testing::presetConfig("llama"), 1);
    const FidelityResult result =
        PressFidelity::measure(*model, dynamicCache(), kPromptInPressFidelity, 12, PressSettings{"knorm", 0.5, {}});
    kvscope::runtime::GenerationOptions options;
    options.maxNewTokens = 12;
    options.stopAtEos = false;
    kvscope::runtime::Generator greedy(*model, dynamicCache(), options);
    greedy.prefill(kPromptInPressFidelity);
    while (!greedy.finished()) {
        greedy.step();
    }
    EXPECT_EQ(result.tokens, greedy.generatedTokens());
}

TEST(PressFidelityTest, NoCompressionMeansNoDivergence) {
    auto model = kvscope::model::ModelLoader::builtin(kvscope::testing::presetConfig("llama"), 1);
    const FidelityResult result =
        PressFidelity::measure(*model, dynamicCache(), kPromptInPressFidelity, 10, PressSettings{"snapkv", 0.0, {{"window_size", "8"}}});
    ASSERT_EQ(result.divergences.size(), 10u);
    for (const double divergence : result.divergences) {
        EXPECT_NEAR(divergence, 0.0, 1e-9);
    }
    EXPECT_EQ(result.topAgreement, 1.0);
    EXPECT_EQ(result.firstDisagreement, -1);
}

TEST(PressFidelityTest, APressMovesTheDistributionsAfterThePrefillOnly) {
    auto model = kvscope::model::ModelLoader::builtin(kvscope::testing::presetConfig("llama"), 1);
    const FidelityResult result =
        PressFidelity::measure(*model, dynamicCache(), kPromptInPressFidelity, 16, PressSettings{"snapkv", 0.75, {{"window_size", "8"}}});
    ASSERT_EQ(result.divergences.size(), 16u);
    ASSERT_EQ(result.topAgrees.size(), 16u);
    // kvpress compresses each layer after its forward pass: the prefill's own prediction is full attention's.
    EXPECT_NEAR(result.divergences[0], 0.0, 1e-9);
    EXPECT_TRUE(result.topAgrees[0]);
    double total = 0.0;
    int64_t agreements = 0;
    for (size_t token = 0; token < result.divergences.size(); ++token) {
        EXPECT_GE(result.divergences[token], -1e-12) << "a KL divergence is never negative";
        total += result.divergences[token];
        agreements += result.topAgrees[token] ? 1 : 0;
    }
    EXPECT_GT(total, 1e-3) << "dropping three quarters of the prompt changed nothing";
    EXPECT_DOUBLE_EQ(result.meanDivergence, total / 16.0);
    EXPECT_DOUBLE_EQ(result.topAgreement, static_cast<double>(agreements) / 16.0);
    EXPECT_EQ(result.decisions.size(), static_cast<size_t>(model->architecture().numLayers()));
}

TEST(PressFidelityTest, RefusesWhatThePressRefuses) {
    auto model = kvscope::model::ModelLoader::builtin(kvscope::testing::presetConfig("llama"), 1);
    kvscope::config::CacheSettings fixed;
    fixed.kind = kvscope::config::CacheKind::Static;
    EXPECT_THROW(PressFidelity::measure(*model, fixed, kPromptInPressFidelity, 4, PressSettings{"knorm", 0.5, {}}),
                 kvscope::runtime::GenerationError);
    EXPECT_THROW(PressFidelity::measure(*model, dynamicCache(), kPromptInPressFidelity, 4, PressSettings{"squeeze", 0.5, {}}),
                 kvscope::runtime::GenerationError);
}

TEST(PressFidelityTest, AReferenceMadeOnceGivesEachPressTheSameResult) {
    auto model = kvscope::model::ModelLoader::builtin(kvscope::testing::presetConfig("llama"), 1);
    const kvscope::runtime::FidelityReference reference =
        PressFidelity::reference(*model, dynamicCache(), kPromptInPressFidelity, 10);
    ASSERT_EQ(reference.tokens.size(), 10u);
    EXPECT_EQ(reference.prompt, kPromptInPressFidelity);
    EXPECT_EQ(reference.logProbabilities.size(), 10u * static_cast<size_t>(reference.vocab));
    for (const PressSettings& press :
         {PressSettings{"knorm", 0.5, {}}, PressSettings{"snapkv", 0.75, {{"window_size", "8"}}}}) {
        const FidelityResult alone = PressFidelity::measure(*model, dynamicCache(), kPromptInPressFidelity, 10, press);
        const FidelityResult shared = PressFidelity::measure(*model, dynamicCache(), reference, press);
        EXPECT_EQ(shared.tokens, alone.tokens);
        EXPECT_EQ(shared.divergences, alone.divergences) << press.name << ": not bit for bit";
        EXPECT_EQ(shared.topAgrees, alone.topAgrees);
        EXPECT_EQ(shared.decisions.size(), alone.decisions.size());
    }
}

TEST(PressFidelityTest, TheWeightsDigestTellsWeightsApart) {
    auto first = kvscope::model::ModelLoader::builtin(kvscope::testing::presetConfig("llama"), 1);
    auto again = kvscope::model::ModelLoader::builtin(kvscope::testing::presetConfig("llama"), 1);
    auto other = kvscope::model::ModelLoader::builtin(kvscope::testing::presetConfig("llama"), 2);
    EXPECT_EQ(PressFidelity::weightsDigest(*first).size(), 16u);
    EXPECT_EQ(PressFidelity::weightsDigest(*first), PressFidelity::weightsDigest(*again));
    EXPECT_NE(PressFidelity::weightsDigest(*first), PressFidelity::weightsDigest(*other));
}

} // namespace
