// SPDX-License-Identifier: GPL-3.0-or-later
// gguf-py (llama.cpp's own GGUF library) as the oracle of kvscope's GGUF reader (gguf_fixtures.py): every block
// type kvscope reads dequantises bit for bit as gguf.quants.dequantize does on random blocks; a file written by
// gguf.GGUFWriter and the real SmolLM2-135M-Instruct GGUF read back with the same metadata (types and values),
// tensor infos and dequantised tensors as gguf.GGUFReader gives.
#include "kvscope/gguf/BlockType.h"
#include "kvscope/gguf/GgufFile.h"
#include "GgufPyOracle.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

using kvscope::gguf::BlockType;
using kvscope::gguf::GgufFile;
using kvscope::testing::ggufpy::expectAsGgufPy;
using kvscope::testing::ggufpy::firstDifference;
using kvscope::testing::ggufpy::readBytes;
using kvscope::testing::ggufpy::readFloats;
using kvscope::testing::ggufpy::readJson;

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

} // namespace

TEST(GgufPeerTest, EveryBlockTypeDequantisesAsGgufPy) {
    // With every kernel level this processor runs (the portable loops are what a processor without AVX2 gets).
    const kvscope::gguf::KernelLevel best = BlockType::supportedKernelLevel();
    for (int level = 0; level <= static_cast<int>(best); ++level)
    for (const BlockType* type : BlockType::all()) {
        BlockType::useKernelLevel(static_cast<kvscope::gguf::KernelLevel>(level));
        SCOPED_TRACE(std::string(type->name()) + ", " + BlockType::kernelLevelName(BlockType::kernelLevel()));
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
    BlockType::useKernelLevel(best);
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
