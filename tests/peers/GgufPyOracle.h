// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// gguf-py's records (gguf_fixtures.py: what GGUFReader reads from a file, and the floats gguf.quants.dequantize
// makes) against kvscope's GgufFile, for the peer tests that read GGUF files.
#include "kvscope/gguf/GgufFile.h"

#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kvscope::testing::ggufpy {

inline std::vector<uint8_t> readBytes(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline std::vector<float> readFloats(const std::filesystem::path& path) {
    const std::vector<uint8_t> bytes = readBytes(path);
    std::vector<float> values(bytes.size() / 4);
    std::memcpy(values.data(), bytes.data(), values.size() * 4);
    return values;
}

/// Bitwise equality (NaN payloads included); the first differing index, or -1.
inline long firstDifference(const std::vector<float>& ours, const std::vector<float>& peer) {
    if (ours.size() != peer.size()) {
        return 0;
    }
    for (size_t i = 0; i < ours.size(); ++i) {
        if (std::bit_cast<uint32_t>(ours[i]) != std::bit_cast<uint32_t>(peer[i])) {
            return static_cast<long>(i);
        }
    }
    return -1;
}

inline nlohmann::json readJson(const std::filesystem::path& path) {
    std::ifstream in(path);
    return nlohmann::json::parse(in);
}

inline void expectValue(const kvscope::gguf::GgufValue& value, const nlohmann::json& element, const std::string& key) {
    if (element.is_string()) {
        EXPECT_EQ(value.asString(key), element.get<std::string>()) << key;
    } else if (element.is_boolean()) {
        EXPECT_EQ(value.asBool(key), element.get<bool>()) << key;
    } else if (element.is_number_float()) {
        EXPECT_EQ(value.asNumber(key), element.get<double>()) << key;
    } else if (element.is_number_unsigned()) {
        EXPECT_EQ(value.asUnsigned(key), element.get<uint64_t>()) << key;
    } else {
        EXPECT_EQ(value.asSigned(key), element.get<int64_t>()) << key;
    }
}

/// The file as GGUFReader read it: header, every metadata key and tensor info, and the dequantised tensors
/// listed under `dequantised` (or all) equal to the floats in `tensorFolder`.
inline void expectAsGgufPy(const kvscope::gguf::GgufFile& file, const nlohmann::json& record, const std::filesystem::path& tensorFolder,
                    const std::vector<std::string>& dequantised) {
    const std::string peer = record.at("peer").get<std::string>();
    EXPECT_EQ(file.version(), record.at("version").get<uint32_t>()) << peer;
    EXPECT_EQ(file.alignment(), record.at("alignment").get<uint64_t>()) << peer;
    EXPECT_EQ(file.dataOffset(), record.at("data_offset").get<uint64_t>()) << peer;
    const nlohmann::json& metadata = record.at("metadata");
    EXPECT_EQ(file.metadata().values().size(), metadata.size()) << peer << ": metadata keys";
    for (const auto& [key, expected] : metadata.items()) {
        const auto* value = file.metadata().find(key);
        ASSERT_NE(value, nullptr) << peer << " reads `" << key << "`, kvscope does not";
        EXPECT_EQ(static_cast<int>(value->type()), expected.at("type").get<int>()) << key;
        if (expected.contains("count")) {
            const auto& array = value->asArray(key);
            ASSERT_EQ(array.size(), expected.at("count").get<size_t>()) << key;
            EXPECT_EQ(static_cast<int>(value->elementType()), expected.at("element_type").get<int>()) << key;
            const nlohmann::json& head = expected.at("head");
            for (size_t i = 0; i < head.size(); ++i) {
                expectValue(array[i], head[i], key + "[" + std::to_string(i) + "]");
            }
            const nlohmann::json& tail = expected.at("tail");
            for (size_t i = 0; i < tail.size(); ++i) {
                expectValue(array[array.size() - tail.size() + i], tail[i], key + " tail");
            }
        } else {
            expectValue(*value, expected.at("value"), key);
        }
    }
    const nlohmann::json& tensors = record.at("tensors");
    ASSERT_EQ(file.tensors().size(), tensors.size()) << peer << ": tensors";
    for (size_t i = 0; i < tensors.size(); ++i) {
        const auto& info = file.tensors()[i];
        const nlohmann::json& expected = tensors[i];
        const std::string name = expected.at("name").get<std::string>();
        EXPECT_EQ(info.name, name);
        EXPECT_EQ(std::string(info.type.name), expected.at("type").get<std::string>()) << name;
        EXPECT_EQ(info.dims, expected.at("ne").get<std::vector<uint64_t>>()) << name;
        EXPECT_EQ(info.fileOffset, expected.at("file_offset").get<uint64_t>()) << name;
        EXPECT_EQ(info.byteSize, expected.at("bytes").get<uint64_t>()) << name;
    }
    for (const std::string& name : dequantised) {
        const long at = firstDifference(file.dequantize(name), readFloats(tensorFolder / (name + ".f32")));
        EXPECT_EQ(at, -1) << peer << ": tensor `" << name << "` (" << file.tensor(name).type.name
                          << ") first differs at element " << at;
    }
}

} // namespace kvscope::testing::ggufpy
