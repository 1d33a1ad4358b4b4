// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/runtime/ModelSource.h"

#include "kvscope/config/ModelConfig.h"
#include "kvscope/model/LanguageModel.h"
#include "kvscope/model/ModelLoader.h"
#include "kvscope/runtime/ByteTextCodec.h"
#include "kvscope/runtime/GenerationError.h"
#include "kvscope/runtime/HuggingFaceTextCodec.h"
#include "kvscope/runtime/PresetCatalog.h"

namespace kvscope::runtime {

ModelSource::Loaded ModelSource::load(const std::string& preset, const std::string& configPath,
                                      const std::string& checkpointDir, std::optional<std::uint64_t> weightSeed,
                                      const at::Device& device) {
    Loaded loaded;
    if (!checkpointDir.empty()) {
        loaded.model = model::ModelLoader::fromCheckpoint(checkpointDir, device);
        loaded.name = checkpointDir;
        loaded.source = {{"checkpoint", loaded.name}};
        if (HuggingFaceTextCodec::folderHasTokenizer(checkpointDir)) {
            auto text = HuggingFaceTextCodec::fromPath(checkpointDir);
            const std::int64_t vocabulary = loaded.model->architecture().vocabSize();
            if (text->vocabSize() > vocabulary) {
                throw GenerationError("the tokenizer of " + checkpointDir + " has " + std::to_string(text->vocabSize()) +
                                      " ids but the model's vocabulary has " + std::to_string(vocabulary) +
                                      ": they do not belong together");
            }
            loaded.text = std::move(text);
        }
    } else if (!configPath.empty()) {
        const std::uint64_t seed = weightSeed.value_or(0);
        loaded.model = model::ModelLoader::builtin(config::ModelConfig::fromFile(configPath), seed, device);
        loaded.name = configPath;
        loaded.source = {{"config", loaded.name}, {"weight_seed", seed}};
    } else {
        const PresetCatalog catalog;
        loaded.name = preset.empty() ? PresetCatalog::defaultPreset() : preset;
        const std::filesystem::path trained = catalog.weightsPath(loaded.name);
        if (!weightSeed && !trained.empty()) {
            loaded.model = model::ModelLoader::fromWeightsFile(catalog.load(loaded.name), trained, device);
            loaded.source = {{"preset", loaded.name}, {"weights", trained.filename().string()}};
        } else {
            const std::uint64_t seed = weightSeed.value_or(0);
            loaded.model = model::ModelLoader::builtin(catalog.load(loaded.name), seed, device);
            loaded.source = {{"preset", loaded.name}, {"weight_seed", seed}};
        }
    }
    if (!loaded.text) {
        loaded.text = std::make_unique<ByteTextCodec>();
    }
    return loaded;
}

} // namespace kvscope::runtime
