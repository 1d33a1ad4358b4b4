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
                                      const std::string& checkpointDir, std::uint64_t weightSeed,
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
        loaded.model = model::ModelLoader::builtin(config::ModelConfig::fromFile(configPath), weightSeed, device);
        loaded.name = configPath;
        loaded.source = {{"config", loaded.name}, {"weight_seed", weightSeed}};
    } else {
        const PresetCatalog catalog;
        loaded.name = preset.empty() ? PresetCatalog::defaultPreset() : preset;
        loaded.model = model::ModelLoader::builtin(catalog.load(loaded.name), weightSeed, device);
        loaded.source = {{"preset", loaded.name}, {"weight_seed", weightSeed}};
    }
    if (!loaded.text) {
        loaded.text = std::make_unique<ByteTextCodec>();
    }
    return loaded;
}

} // namespace kvscope::runtime
