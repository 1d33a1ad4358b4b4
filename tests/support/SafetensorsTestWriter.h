// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Test helper: writes safetensors files and Hugging Face checkpoint folders from named tensors, so
// that tests need no checkpoint on disk.
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
    /// "F32", "F16" or "BF16" for a dtype.
    static std::string dtypeName(at::ScalarType dtype) {
        switch (dtype) {
        case at::kFloat:
            return "F32";
        case at::kHalf:
            return "F16";
        case at::kBFloat16:
            return "BF16";
        default:
            throw std::invalid_argument("SafetensorsTestWriter writes F32, F16 or BF16 only");
        }
    }

    /// One .safetensors file with every tensor converted to `dtype`, data in name order.
    static void writeFile(const std::filesystem::path& path, const std::map<std::string, at::Tensor>& tensors,
                          at::ScalarType dtype, const std::map<std::string, std::string>& metadata = {}) {
        nlohmann::json header = nlohmann::json::object();
        if (!metadata.empty()) {
            header["__metadata__"] = metadata;
        }
        std::vector<at::Tensor> converted;
        uint64_t offset = 0;
        for (const auto& [name, tensor] : tensors) {
            at::Tensor data = tensor.to(at::kCPU).to(dtype).contiguous();
            const uint64_t bytes = static_cast<uint64_t>(data.numel()) * data.element_size();
            header[name] = {{"dtype", dtypeName(dtype)}, {"shape", data.sizes().vec()}, {"data_offsets", {offset, offset + bytes}}};
            offset += bytes;
            converted.push_back(data);
        }
        std::string text = header.dump();
        // The reference writer pads the header with spaces to a multiple of 8 bytes.
        text.append((8 - text.size() % 8) % 8, ' ');
        std::ofstream out(path, std::ios::binary);
        const uint64_t length = text.size();
        out.write(reinterpret_cast<const char*>(&length), 8);
        out.write(text.data(), static_cast<std::streamsize>(text.size()));
        for (const at::Tensor& data : converted) {
            out.write(static_cast<const char*>(data.data_ptr()), static_cast<std::streamsize>(data.numel() * data.element_size()));
        }
        if (!out) {
            throw std::runtime_error("cannot write " + path.string());
        }
    }

    /// A checkpoint folder: config.json plus model.safetensors, or `shards` files with an index.
    static void writeCheckpoint(const std::filesystem::path& directory, const nlohmann::json& config,
                                const std::map<std::string, at::Tensor>& tensors, at::ScalarType dtype, int shards = 1) {
        std::filesystem::create_directories(directory);
        std::ofstream(directory / "config.json") << config.dump(2);
        if (shards <= 1) {
            writeFile(directory / "model.safetensors", tensors, dtype);
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
            writeFile(directory / shardName(shard, parts.size()), parts[shard], dtype);
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
