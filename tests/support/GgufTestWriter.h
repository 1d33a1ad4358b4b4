// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Test helper: little-endian GGUF bytes appended field by field, for files built in memory
// (GgufFile::fromBytes), well formed or damaged on purpose.
#include <cstdint>
#include <string>
#include <vector>

namespace kvscope::testing {

class GgufTestWriter {
public:
    template <typename T>
    GgufTestWriter& put(T value) {
        const auto* p = reinterpret_cast<const uint8_t*>(&value);
        bytes.insert(bytes.end(), p, p + sizeof(T));
        return *this;
    }
    GgufTestWriter& string(const std::string& text) {
        put<uint64_t>(text.size());
        bytes.insert(bytes.end(), text.begin(), text.end());
        return *this;
    }
    GgufTestWriter& header(uint32_t version, uint64_t tensors, uint64_t metadata) {
        bytes.insert(bytes.end(), {'G', 'G', 'U', 'F'});
        return put(version).put(tensors).put(metadata);
    }
    /// A tensor info: `dims` in ggml's order (ne[0], the row length, first), ggml type id, data offset.
    GgufTestWriter& tensor(const std::string& name, std::vector<uint64_t> dims, uint32_t type, uint64_t offset) {
        string(name).put<uint32_t>(static_cast<uint32_t>(dims.size()));
        for (uint64_t d : dims) {
            put(d);
        }
        return put(type).put(offset);
    }
    GgufTestWriter& padTo(size_t alignment) {
        while (bytes.size() % alignment != 0) {
            bytes.push_back(0);
        }
        return *this;
    }
    GgufTestWriter& append(const std::vector<uint8_t>& data) {
        bytes.insert(bytes.end(), data.begin(), data.end());
        return *this;
    }

    std::vector<uint8_t> bytes;
};

} // namespace kvscope::testing
