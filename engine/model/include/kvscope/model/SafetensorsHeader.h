// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace kvscope::model {

/// The header of a .safetensors file (8-byte little-endian length, then a JSON object), parsed and
/// checked without LibTorch: every tensor it accepts lies inside the data section and spans exactly
/// the bytes its shape and dtype need, with no arithmetic overflow on the way, so that a view of it
/// is safe. Model files come from strangers: tests/fuzz/SafetensorsHeaderFuzzer holds it to that.
class SafetensorsHeader {
public:
    struct Entry {
        std::string dtype; ///< "F32", "F16" or "BF16"
        std::vector<std::int64_t> shape;
        std::uint64_t begin = 0; ///< offsets into the data section
        std::uint64_t end = 0;
    };

    /// Headers larger than this are refused before parsing (the safetensors library's own limit).
    static constexpr std::uint64_t kMaxHeaderBytes = 100ull * 1024 * 1024;

    /// Parses the header at the start of `file` (the whole file's bytes); throws ModelError naming
    /// `where` (e.g. "safetensors file `model.safetensors`"), the tensor and the problem.
    static SafetensorsHeader parse(std::span<const std::uint8_t> file, const std::string& where);
    /// The same for a file of other dtypes (each allowed name with its bytes per element, in the order the
    /// refusal lists them): runtime::FidelityReference's F64 and I64.
    static SafetensorsHeader parse(std::span<const std::uint8_t> file, const std::string& where,
                                   const std::vector<std::pair<std::string, std::uint64_t>>& dtypes);

    /// Bytes per element of a dtype the engine reads, 0 for any other.
    static std::uint64_t dtypeBytes(const std::string& dtype);
    /// The dtypes the engine reads, for messages: "F32, F16, BF16".
    static const char* allowedDtypes();

    /// Where the data section starts in the file (8 + the header's length).
    std::uint64_t dataStart() const { return m_dataStart; }
    const std::map<std::string, Entry>& entries() const { return m_entries; }
    /// `__metadata__`'s string values.
    const std::map<std::string, std::string>& metadata() const { return m_metadata; }

private:
    std::uint64_t m_dataStart = 0;
    std::map<std::string, Entry> m_entries;
    std::map<std::string, std::string> m_metadata;
};

} // namespace kvscope::model
