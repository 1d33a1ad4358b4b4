// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Test helper: writes Hugging Face checkpoint folders (one file or shards with an index) from named
// tensors through the engine's SafetensorsWriter, so that tests need no checkpoint on disk.
#include "kvscope/model/SafetensorsWriter.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace kvscope::testing {

class SafetensorsTestWriter {
public:
    /// A checkpoint folder: config.json plus model.safetensors, or `shards` files with an index.
    static void writeCheckpoint(const std::filesystem::path& directory, const nlohmann::json& config,
                                const std::map<std::string, at::Tensor>& tensors, at::ScalarType dtype, int shards = 1) {
        std::filesystem::create_directories(directory);
        std::ofstream(directory / "config.json") << config.dump(2);
        if (shards <= 1) {
            model::SafetensorsWriter::writeFile(directory / "model.safetensors", tensors, dtype);
            return;
        }
        std::vector<std::map<std::string, at::Tensor>> parts(static_cast<size_t>(shards));
        nlohmann::json weightMap = nlohmann::json::object();
        size_t index = 0;
        for (const auto& [name, tensor] : tensors) {
            const size_t shard = index++ % parts.size();
            parts[shard][name] = tensor;
            weightMap[name] = shardName(shard, parts.size());
        }
        for (size_t shard = 0; shard < parts.size(); ++shard) {
            model::SafetensorsWriter::writeFile(directory / shardName(shard, parts.size()), parts[shard], dtype);
        }
        std::ofstream(directory / "model.safetensors.index.json")
            << nlohmann::json{{"metadata", {{"total_size", 0}}}, {"weight_map", weightMap}}.dump(2);
    }

    static std::string shardName(size_t shard, size_t count) {
        char name[64];
        std::snprintf(name, sizeof(name), "model-%05zu-of-%05zu.safetensors", shard + 1, count);
        return name;
    }
};

} // namespace kvscope::testing
