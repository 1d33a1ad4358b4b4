// SPDX-License-Identifier: GPL-3.0-or-later
// gguf-py (llama.cpp's own GGUF library) as the oracle of kvscope's GGUF reader (gguf_fixtures.py): every block
// type kvscope reads dequantises bit for bit as gguf.quants.dequantize does on random blocks; a file written by
// gguf.GGUFWriter and the real SmolLM2-135M-Instruct GGUF read back with the same metadata (types and values),
// tensor infos and dequantised tensors as gguf.GGUFReader gives.
#include "kvscope/gguf/BlockType.h"
#include "kvscope/gguf/GgufFile.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

using kvscope::gguf::BlockType;
using kvscope::gguf::GgufFile;

namespace {

const std::filesystem::path& fixtures() {
    static const std::filesystem::path directory = [] {
        char pattern[] = "/tmp/kvscope-gguf-XXXXXX";
        const std::filesystem::path made = ::mkdtemp(pattern);
        const std::filesystem::path peers = std::filesystem::path(KVSCOPE_SOURCE_DIR) / "tests" / "peers";
        const std::string command = "'" + (peers / "peer-python.sh").string() + "' '" +
                                    (peers / "gguf_fixtures.py").string() + "' '" + made.string() + "' --real smollm2";
        if (std::system(command.c_str()) != 0) {
            ADD_FAILURE() << "the peer (gguf_fixtures.py, gguf-py) failed: " << command;
        }
        static const std::string removed = made.string();
        std::atexit([] { std::filesystem::remove_all(removed); });
        return made;
    }();
    return directory;
}

std::vector<uint8_t> readBytes(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<float> readFloats(const std::filesystem::path& path) {
    const std::vector<uint8_t> bytes = readBytes(path);
    std::vector<float> values(bytes.size() / 4);
    std::memcpy(values.data(), bytes.data(), values.size() * 4);
    return values;
}

/// Bitwise equality (NaN payloads included); the first differing index, or -1.
long firstDifference(const std::vector<float>& ours, const std::vector<float>& peer) {
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

nlohmann::json readJson(const std::filesystem::path& path) {
    std::ifstream in(path);
    return nlohmann::json::parse(in);
}

void expectValue(const kvscope::gguf::GgufValue& value, const nlohmann::json& element, const std::string& key) {
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
void expectAsGgufPy(const GgufFile& file, const nlohmann::json& record, const std::filesystem::path& tensorFolder,
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

} // namespace

TEST(GgufPeerTest, EveryBlockTypeDequantisesAsGgufPy) {
    for (const BlockType* type : BlockType::all()) {
        SCOPED_TRACE(type->name());
        const std::vector<uint8_t> blocks = readBytes(fixtures() / "blocks" / (std::string(type->name()) + ".bin"));
        const std::vector<float> peer = readFloats(fixtures() / "blocks" / (std::string(type->name()) + ".f32"));
        ASSERT_FALSE(blocks.empty());
        ASSERT_EQ(blocks.size() % type->typeSize(), 0u);
        const size_t count = blocks.size() / type->typeSize();
        std::vector<float> ours(count * type->blockSize());
        type->dequantize(blocks.data(), count, ours.data());
        const long at = firstDifference(ours, peer);
        EXPECT_EQ(at, -1) << "gguf.quants.dequantize and kvscope first differ at value " << at << " of "
                          << peer.size() << (at >= 0 && static_cast<size_t>(at) < ours.size()
                                                 ? ": " + std::to_string(ours[at]) + " vs " + std::to_string(peer[at])
                                                 : std::string());
    }
}

TEST(GgufPeerTest, TheCacheTypesQuantiseByteForByteAsGgufPy) {
    std::vector<std::string> quantising;
    for (const BlockType* type : BlockType::all()) {
        if (!type->quantizes()) {
            continue;
        }
        SCOPED_TRACE(type->name());
        quantising.push_back(type->name());
        if (std::string(type->name()) == "IQ4_NL") {
            continue; // gguf-py has no IQ4_NL quantiser: LlamaCppCachePeerTest checks it against llama.cpp's cache
        }
        const std::vector<float> values = readFloats(fixtures() / "quantize" / (std::string(type->name()) + ".f32"));
        const std::vector<uint8_t> peer = readBytes(fixtures() / "quantize" / (std::string(type->name()) + ".bin"));
        ASSERT_EQ(values.size() % type->blockSize(), 0u);
        const size_t count = values.size() / type->blockSize();
        std::vector<uint8_t> ours(count * type->typeSize());
        type->quantize(values.data(), count, ours.data());
        ASSERT_EQ(ours.size(), peer.size());
        const auto differs = std::mismatch(ours.begin(), ours.end(), peer.begin());
        EXPECT_TRUE(differs.first == ours.end())
            << "gguf.quants.quantize and kvscope first differ at byte " << (differs.first - ours.begin()) << " (block "
            << (differs.first - ours.begin()) / type->typeSize() << ")";
    }
    EXPECT_EQ(quantising, (std::vector<std::string>{"F32", "F16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "IQ4_NL", "BF16"}));
}

TEST(GgufPeerTest, AFileWrittenByGgufPyReadsBackAsGgufPyReadsIt) {
    const GgufFile file(fixtures() / "written.gguf");
    std::vector<std::string> names;
    for (const auto& info : file.tensors()) {
        names.push_back(info.name);
    }
    EXPECT_EQ(names.size(), BlockType::all().size());
    expectAsGgufPy(file, readJson(fixtures() / "written.json"), fixtures() / "written", names);
}

TEST(GgufPeerTest, TheRealSmolLM2FileReadsAsGgufPyReadsIt) {
    const nlohmann::json record = readJson(fixtures() / "real.json");
    const GgufFile file(record.at("path").get<std::string>());
    EXPECT_EQ(file.metadata().string("general.architecture"), "llama");
    expectAsGgufPy(file, record, fixtures() / "real", record.at("dequantised").get<std::vector<std::string>>());
}
