// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/config/ModelConfig.h"

#include <filesystem>
#include <string>
#include <vector>

namespace kvscope::runtime {

/// The built-in model presets: Hugging Face config.json files named `<preset>.json` in one folder
/// ($KVSCOPE_PRESETS, else the source tree's resources/presets), with the layer patterns of real
/// families scaled down to run on a CPU, and their trained weights as `<preset>.safetensors` beside
/// them where `kvscope-cli train` (scripts/train-presets.sh) has made some.
class PresetCatalog {
public:
    /// The folder from $KVSCOPE_PRESETS when set, else the one this build was configured with.
    PresetCatalog();
    explicit PresetCatalog(std::filesystem::path directory);

    const std::filesystem::path& directory() const { return m_directory; }
    /// Preset names, sorted. Refuses a folder that does not exist, naming it and the variable.
    std::vector<std::string> names() const;
    bool contains(const std::string& name) const;
    /// The config.json of a preset; refuses unknown names, listing the known ones.
    std::filesystem::path path(const std::string& name) const;
    config::ModelConfig load(const std::string& name) const;
    /// The preset's trained weights (`<preset>.safetensors` beside its config), or an empty path when
    /// it has none; refuses unknown names as path() does.
    std::filesystem::path weightsPath(const std::string& name) const;
    /// The preset `kvscope-cli run` uses without a model option.
    static const char* defaultPreset() { return "llama"; }
    /// The built-in folder (the compile definition), ignoring the environment.
    static std::filesystem::path builtinDirectory();

private:
    std::filesystem::path m_directory;
};

} // namespace kvscope::runtime
