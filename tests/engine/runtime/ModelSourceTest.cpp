// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/config/ModelConfig.h"
#include "kvscope/config/RunSettings.h"
#include "kvscope/model/LanguageModel.h"
#include "kvscope/model/ModelLoader.h"
#include "kvscope/model/SafetensorsWriter.h"
#include "kvscope/runtime/ModelSource.h"
#include "kvscope/runtime/PresetCatalog.h"

#include "ModelTestHelpers.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <optional>

using kvscope::model::ModelLoader;
using kvscope::runtime::ModelSource;
using kvscope::runtime::PresetCatalog;

namespace {


/// A preset folder holding llama.json (copied from the built-in presets) and, when asked, trained
/// weights: the built-in weights of seed 7 written as the trainer writes them.
class PresetFolder {
public:
    explicit PresetFolder(bool trained) : m_directory("kvscope-model-source") {
        std::filesystem::copy_file(PresetCatalog(PresetCatalog::builtinDirectory()).path("llama"), m_directory.path() / "llama.json");
        if (trained) {
            const auto weights = ModelLoader::builtin(config(), 7);
            kvscope::model::SafetensorsWriter::writeFile(m_directory.path() / "llama.safetensors",
                                                         weights->parameters().tensors(), at::kFloat);
        }
        ::setenv("KVSCOPE_PRESETS", m_directory.path().c_str(), 1);
    }
    ~PresetFolder() { ::unsetenv("KVSCOPE_PRESETS"); }
    kvscope::config::ModelConfig config() const {
        return kvscope::config::ModelConfig::fromFile(PresetCatalog::builtinDirectory() / "llama.json");
    }

private:
    kvscope::testing::TemporaryDirectory m_directory;
};

at::Tensor logitsOf(kvscope::model::LanguageModel& model) {
    return model.forward(at::arange(5, at::kLong).view({1, 5}), nullptr);
}

} // namespace

TEST(ModelSourceTest, APresetWithTrainedWeightsLoadsThemUnlessAWeightSeedIsGiven) {
    const PresetFolder folder(true);
    const auto seven = ModelLoader::builtin(folder.config(), 7);
    const auto zero = ModelLoader::builtin(folder.config(), 0);

    auto trained = ModelSource::load(kvscope::testing::presetSettings("llama", std::nullopt), at::Device(at::kCPU));
    EXPECT_EQ(trained.source.value("weights", ""), "llama.safetensors");
    EXPECT_FALSE(trained.source.contains("weight_seed"));
    EXPECT_TRUE(at::equal(logitsOf(*trained.model), logitsOf(*seven)));

    auto seeded = ModelSource::load(kvscope::testing::presetSettings("llama", 0), at::Device(at::kCPU));
    EXPECT_EQ(seeded.source.value("weight_seed", 99), 0);
    EXPECT_FALSE(seeded.source.contains("weights"));
    EXPECT_TRUE(at::equal(logitsOf(*seeded.model), logitsOf(*zero)));
}

TEST(ModelSourceTest, APresetWithoutTrainedWeightsHasTheRandomWeightsOfSeedZero) {
    const PresetFolder folder(false);
    const auto zero = ModelLoader::builtin(folder.config(), 0);
    auto loaded = ModelSource::load(kvscope::testing::presetSettings("", std::nullopt), at::Device(at::kCPU));
    EXPECT_EQ(loaded.name, "llama");
    EXPECT_EQ(loaded.source.value("weight_seed", 99), 0);
    EXPECT_TRUE(at::equal(logitsOf(*loaded.model), logitsOf(*zero)));
}
