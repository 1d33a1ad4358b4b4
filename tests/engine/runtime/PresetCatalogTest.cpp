// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/model/Architecture.h"
#include "kvscope/runtime/GenerationError.h"
#include "kvscope/runtime/PresetCatalog.h"

#include "ModelTestHelpers.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

using kvscope::runtime::GenerationError;
using kvscope::runtime::PresetCatalog;

TEST(PresetCatalogTest, ListsTheBuiltinPresets) {
    const PresetCatalog catalog(PresetCatalog::builtinDirectory());
    EXPECT_EQ(catalog.names(), kvscope::testing::presetNames());
    EXPECT_TRUE(catalog.contains(PresetCatalog::defaultPreset()));
    for (const std::string& name : catalog.names()) {
        SCOPED_TRACE(name);
        const auto config = catalog.load(name);
        EXPECT_NO_THROW(kvscope::model::Architecture{config});
        EXPECT_EQ(config.vocabSize, 259); // the byte tokenizer's vocabulary
    }
}

TEST(PresetCatalogTest, UnknownNamesListTheKnownOnes) {
    const PresetCatalog catalog(PresetCatalog::builtinDirectory());
    try {
        catalog.path("gpt5");
        FAIL() << "an unknown preset was found";
    } catch (const GenerationError& error) {
        EXPECT_NE(std::string(error.what()).find("gemma3, gemma3n, llama"), std::string::npos) << error.what();
    }
}

TEST(PresetCatalogTest, EnvironmentOverridesTheFolder) {
    kvscope::testing::TemporaryDirectory directory("kvscope-presets");
    std::ofstream(directory.path() / "tiny.json") << R"({"model_type": "llama", "num_hidden_layers": 1})";
    ::setenv("KVSCOPE_PRESETS", directory.path().c_str(), 1);
    const PresetCatalog catalog;
    ::unsetenv("KVSCOPE_PRESETS");
    EXPECT_EQ(catalog.directory(), directory.path());
    EXPECT_EQ(catalog.names(), std::vector<std::string>{"tiny"});
    EXPECT_EQ(catalog.load("tiny").numHiddenLayers, 1);
    EXPECT_EQ(PresetCatalog().directory(), PresetCatalog::builtinDirectory());
    try {
        PresetCatalog(directory.path() / "absent").names();
        FAIL() << "a missing folder was listed";
    } catch (const GenerationError& error) {
        EXPECT_NE(std::string(error.what()).find("KVSCOPE_PRESETS"), std::string::npos);
    }
}

TEST(PresetCatalogTest, TrainedWeightsSitBesideTheConfig) {
    kvscope::testing::TemporaryDirectory directory("kvscope-presets");
    std::ofstream(directory.path() / "tiny.json") << R"({"model_type": "llama", "num_hidden_layers": 1})";
    std::ofstream(directory.path() / "other.json") << R"({"model_type": "llama", "num_hidden_layers": 1})";
    std::ofstream(directory.path() / "tiny.safetensors") << "weights";
    const PresetCatalog catalog(directory.path());
    EXPECT_EQ(catalog.weightsPath("tiny"), directory.path() / "tiny.safetensors");
    EXPECT_TRUE(catalog.weightsPath("other").empty());
    EXPECT_THROW(catalog.weightsPath("absent"), GenerationError);
    // The weights file is no preset of its own.
    EXPECT_EQ(catalog.names(), (std::vector<std::string>{"other", "tiny"}));
}
