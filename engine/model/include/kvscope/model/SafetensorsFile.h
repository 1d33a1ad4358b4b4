// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/model/SafetensorsHeader.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kvscope::model {

/// One .safetensors file (8-byte little-endian header length, JSON header, raw little-endian data),
/// memory-mapped: tensors are views of the mapping in the file's dtype and keep it alive. The header is
/// checked by SafetensorsHeader.
class SafetensorsFile {
public:
    /// Maps the file and validates the header; throws ModelError naming the file and the problem.
    explicit SafetensorsFile(const std::filesystem::path& path);
    ~SafetensorsFile();
    SafetensorsFile(SafetensorsFile&&) noexcept;
    SafetensorsFile& operator=(SafetensorsFile&&) noexcept;

    const std::filesystem::path& path() const { return m_path; }
    std::vector<std::string> names() const;
    bool contains(const std::string& name) const { return m_entries.count(name) != 0; }
    /// The tensor's dtype as the header names it ("F32", "F16", "BF16").
    const std::string& dtypeName(const std::string& name) const;
    /// A view of the mapped data (no copy); the mapping stays alive while the tensor does.
    at::Tensor tensor(const std::string& name) const;
    const std::map<std::string, std::string>& metadata() const { return m_metadata; }
    /// The allowed dtypes.
    static const char* allowedDtypes();

private:
    using Entry = SafetensorsHeader::Entry;
    class Mapping;

    const Entry& entry(const std::string& name) const;

    std::filesystem::path m_path;
    std::shared_ptr<Mapping> m_mapping;
    uint64_t m_dataStart = 0;
    std::map<std::string, Entry> m_entries;
    std::map<std::string, std::string> m_metadata;
};

} // namespace kvscope::model
