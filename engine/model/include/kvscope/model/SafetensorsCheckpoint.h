// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/model/SafetensorsFile.h"

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace kvscope::model {

/// A Hugging Face checkpoint folder: config.json plus one model.safetensors, or shards listed in
/// model.safetensors.index.json (without an index, every *.safetensors file in the folder).
class SafetensorsCheckpoint {
public:
    explicit SafetensorsCheckpoint(const std::filesystem::path& directory);
    /// One .safetensors file on its own (a preset's trained weights beside its config); directory()
    /// is then the file, which error messages name.
    static SafetensorsCheckpoint singleFile(const std::filesystem::path& file);

    const std::filesystem::path& directory() const { return m_directory; }
    std::filesystem::path configPath() const { return m_directory / "config.json"; }
    std::vector<std::string> names() const;
    bool contains(const std::string& name) const { return m_fileOf.count(name) != 0; }
    /// A view of the tensor in its file's dtype (memory-mapped).
    at::Tensor tensor(const std::string& name) const;
    /// The dtypes found, e.g. {"BF16"}.
    std::vector<std::string> dtypes() const;
    size_t fileCount() const { return m_files.size(); }

private:
    SafetensorsCheckpoint() = default;

    std::filesystem::path m_directory;
    std::vector<SafetensorsFile> m_files;
    std::map<std::string, size_t> m_fileOf;
};

} // namespace kvscope::model
