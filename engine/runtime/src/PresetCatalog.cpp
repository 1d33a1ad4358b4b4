// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/runtime/PresetCatalog.h"

#include "kvscope/runtime/GenerationError.h"

#include "kvscope/config/DataDirectory.h"

#include <algorithm>

#ifndef KVSCOPE_PRESETS_DIR
#error "KVSCOPE_PRESETS_DIR must point at resources/presets"
#endif

namespace kvscope::runtime {

std::filesystem::path PresetCatalog::builtinDirectory() {
    return config::DataDirectory::locate("presets", nullptr, KVSCOPE_PRESETS_DIR);
}

PresetCatalog::PresetCatalog()
    : m_directory(config::DataDirectory::locate("presets", "KVSCOPE_PRESETS", KVSCOPE_PRESETS_DIR)) {}

PresetCatalog::PresetCatalog(std::filesystem::path directory) : m_directory(std::move(directory)) {}

std::vector<std::string> PresetCatalog::names() const {
    if (!std::filesystem::is_directory(m_directory)) {
        throw GenerationError("preset folder `" + m_directory.string() +
                              "` does not exist (set KVSCOPE_PRESETS to a folder of <name>.json configs)");
    }
    std::vector<std::string> names;
    for (const auto& item : std::filesystem::directory_iterator(m_directory)) {
        if (item.is_regular_file() && item.path().extension() == ".json") {
            names.push_back(item.path().stem().string());
        }
    }
    std::sort(names.begin(), names.end());
    return names;
}

bool PresetCatalog::contains(const std::string& name) const {
    const auto known = names();
    return std::find(known.begin(), known.end(), name) != known.end();
}

std::filesystem::path PresetCatalog::path(const std::string& name) const {
    const auto known = names();
    if (std::find(known.begin(), known.end(), name) == known.end()) {
        std::string list;
        for (const std::string& entry : known) {
            list += (list.empty() ? "" : ", ") + entry;
        }
        throw GenerationError("unknown preset `" + name + "` (allowed: " + (list.empty() ? "none found" : list) +
                              "; folder " + m_directory.string() + ")");
    }
    return m_directory / (name + ".json");
}

std::filesystem::path PresetCatalog::weightsPath(const std::string& name) const {
    std::filesystem::path weights = path(name).replace_extension(".safetensors");
    return std::filesystem::is_regular_file(weights) ? weights : std::filesystem::path();
}

config::ModelConfig PresetCatalog::load(const std::string& name) const { return config::ModelConfig::fromFile(path(name)); }

} // namespace kvscope::runtime
