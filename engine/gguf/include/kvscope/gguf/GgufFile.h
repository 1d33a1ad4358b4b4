// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gguf/GgufMetadata.h"
#include "kvscope/gguf/GgufTensorInfo.h"

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace kvscope::gguf {

/// A GGUF file (llama.cpp's checkpoints; versions 2 and 3, little-endian), memory-mapped read-only. Opening
/// checks every length, count, offset and size against the file, so that reading a tensor afterwards never
/// leaves it; errors are GgufError naming the file and the problem.
class GgufFile {
public:
    explicit GgufFile(const std::filesystem::path& path);
    /// The same reading of bytes held in memory (tests, fuzzing); `name` is what errors call them.
    static GgufFile fromBytes(std::vector<uint8_t> bytes, const std::string& name = "GGUF data");

    const std::string& name() const { return m_name; }
    uint32_t version() const { return m_version; }
    uint64_t alignment() const { return m_alignment; }
    uint64_t dataOffset() const { return m_dataOffset; }
    uint64_t fileSize() const;
    const GgufMetadata& metadata() const { return m_metadata; }
    /// In file order.
    const std::vector<GgufTensorInfo>& tensors() const { return m_tensors; }
    const GgufTensorInfo* find(const std::string& tensorName) const;
    /// GgufError naming the file when there is no such tensor.
    const GgufTensorInfo& tensor(const std::string& tensorName) const;
    /// The tensor's stored bytes (a view of the mapping, alive as long as this file or a copy of mapping()).
    std::span<const uint8_t> bytes(const GgufTensorInfo& info) const;
    /// What keeps the mapping (and every bytes() view) alive without the parsed metadata: a model's matrices hold
    /// this, so that the metadata (a large vocabulary's token strings) goes once the model is loaded.
    std::shared_ptr<const void> mapping() const { return m_bytes; }
    /// Dequantises to float32 in ggml's element order into `out` (elementCount floats); a type kvscope does not
    /// read is refused by name, with the list of those it does.
    void dequantize(const GgufTensorInfo& info, float* out) const;
    std::vector<float> dequantize(const std::string& tensorName) const;

private:
    class Bytes;
    GgufFile(std::shared_ptr<const Bytes> bytes, std::string name);
    void parse();

    std::shared_ptr<const Bytes> m_bytes;
    std::string m_name;
    uint32_t m_version = 0;
    uint64_t m_alignment = 32;
    uint64_t m_dataOffset = 0;
    GgufMetadata m_metadata;
    std::vector<GgufTensorInfo> m_tensors;
    std::map<std::string, size_t> m_index;
};

} // namespace kvscope::gguf
