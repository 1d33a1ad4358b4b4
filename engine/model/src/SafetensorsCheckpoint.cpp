// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/model/SafetensorsCheckpoint.h"

#include "kvscope/model/ModelError.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <set>

namespace kvscope::model {

SafetensorsCheckpoint::SafetensorsCheckpoint(const std::filesystem::path& directory) : m_directory(directory) {
    if (!std::filesystem::is_directory(directory)) {
        throw ModelError("checkpoint `" + directory.string() + "` is not a directory (expected config.json and *.safetensors)");
    }
    std::vector<std::filesystem::path> files;
    std::map<std::string, std::string> indexed; // tensor name -> shard file name, from the index
    const std::filesystem::path index = directory / "model.safetensors.index.json";
    if (std::filesystem::exists(index)) {
        std::ifstream in(index);
        nlohmann::json document;
        try {
            document = nlohmann::json::parse(in);
            for (const auto& [name, file] : document.at("weight_map").items()) {
                indexed[name] = file.get<std::string>();
            }
        } catch (const nlohmann::json::exception& error) {
            throw ModelError("checkpoint index `" + index.string() +
                             "` must be JSON with a `weight_map` of tensor name -> shard file: " + error.what());
        }
        std::set<std::string> shards;
        for (const auto& [name, file] : indexed) {
            shards.insert(file);
        }
        for (const std::string& shard : shards) {
            files.push_back(directory / shard);
        }
    } else {
        for (const auto& item : std::filesystem::directory_iterator(directory)) {
            if (item.is_regular_file() && item.path().extension() == ".safetensors") {
                files.push_back(item.path());
            }
        }
        std::sort(files.begin(), files.end());
    }
    if (files.empty()) {
        throw ModelError("checkpoint `" + directory.string() + "` holds no *.safetensors file");
    }
    for (const auto& path : files) {
        m_files.emplace_back(path);
        const size_t fileIndex = m_files.size() - 1;
        for (const std::string& name : m_files.back().names()) {
            if (!indexed.empty()) {
                auto it = indexed.find(name);
                if (it == indexed.end() || directory / it->second != path) {
                    continue; // the index assigns this tensor elsewhere (or not at all)
                }
            }
            if (!m_fileOf.emplace(name, fileIndex).second) {
                throw ModelError("checkpoint `" + directory.string() + "` has tensor `" + name + "` in two files (" +
                                 m_files[m_fileOf[name]].path().filename().string() + " and " +
                                 path.filename().string() + ")");
            }
        }
    }
    for (const auto& [name, file] : indexed) {
        if (!m_fileOf.count(name)) {
            throw ModelError("checkpoint index `" + index.string() + "` places tensor `" + name + "` in `" + file +
                             "`, which does not hold it");
        }
    }
}

SafetensorsCheckpoint SafetensorsCheckpoint::singleFile(const std::filesystem::path& file) {
    SafetensorsCheckpoint checkpoint;
    checkpoint.m_directory = file;
    checkpoint.m_files.emplace_back(file);
    for (const std::string& name : checkpoint.m_files.back().names()) {
        checkpoint.m_fileOf.emplace(name, 0);
    }
    return checkpoint;
}

std::vector<std::string> SafetensorsCheckpoint::names() const {
    std::vector<std::string> names;
    for (const auto& [name, file] : m_fileOf) {
        names.push_back(name);
    }
    return names;
}

at::Tensor SafetensorsCheckpoint::tensor(const std::string& name) const {
    auto it = m_fileOf.find(name);
    if (it == m_fileOf.end()) {
        throw ModelError("checkpoint `" + m_directory.string() + "` has no tensor `" + name + "`");
    }
    return m_files[it->second].tensor(name);
}

std::vector<std::string> SafetensorsCheckpoint::dtypes() const {
    std::set<std::string> found;
    for (const auto& [name, file] : m_fileOf) {
        found.insert(m_files[file].dtypeName(name));
    }
    return {found.begin(), found.end()};
}

} // namespace kvscope::model
