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
        loaded.configFile = std::filesystem::path(checkpointDir) / "config.json";
    } else if (!configPath.empty()) {
        loaded.model = model::ModelLoader::builtin(config::ModelConfig::fromFile(configPath), weightSeed, device);
        loaded.name = configPath;
        loaded.configFile = configPath;
    } else {
        const PresetCatalog catalog;
        loaded.name = preset.empty() ? PresetCatalog::defaultPreset() : preset;
        loaded.model = model::ModelLoader::builtin(catalog.load(loaded.name), weightSeed, device);
        loaded.configFile = catalog.path(loaded.name);
    }
    return loaded;
}

} // namespace kvscope::runtime
