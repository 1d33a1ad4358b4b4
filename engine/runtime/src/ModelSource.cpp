// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/runtime/ModelSource.h"

#include "kvscope/config/ModelConfig.h"
#include "kvscope/model/LanguageModel.h"
#include "kvscope/model/ModelLoader.h"
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
    return loaded;
}

} // namespace kvscope::runtime
