// SPDX-License-Identifier: GPL-3.0-or-later
// GgufFile on files built byte by byte: what a well-formed file yields, and the clear refusal of each kind of
// damage (the peer test, tests/peers/GgufPeerTest.cpp, checks the reading against gguf-py's own files).
#include "kvscope/gguf/BlockType.h"
#include "kvscope/gguf/GgufError.h"
#include "kvscope/gguf/GgufFile.h"
#include "GgufTestWriter.h"

#include <cstring>
#include <gtest/gtest.h>

using kvscope::gguf::BlockType;
using kvscope::gguf::GgufError;
using kvscope::gguf::GgufFile;

namespace {

using Builder = kvscope::testing::GgufTestWriter;

/// A file with a string, an array of strings and one Q8_0 tensor of two blocks (d = 0.5, q = i - 16).
std::vector<uint8_t> wellFormed() {
    Builder b;
    b.header(3, 1, 2);
    b.string("general.architecture").put<uint32_t>(8).string("llama");
    b.string("tokenizer.ggml.tokens").put<uint32_t>(9).put<uint32_t>(8).put<uint64_t>(2).string("a").string("bc");
    b.tensor("w", {64}, 8, 0).padTo(32);
    for (int block = 0; block < 2; ++block) {
        b.put<uint16_t>(0x3800); // fp16 0.5
        for (int i = 0; i < 32; ++i) {
            b.put<int8_t>(static_cast<int8_t>(i - 16));
        }
    }
    return b.bytes;
}

std::string refusal(std::vector<uint8_t> bytes) {
    try {
        GgufFile::fromBytes(std::move(bytes), "test.gguf");
    } catch (const GgufError& error) {
        return error.what();
    }
    return "(accepted)";
}

} // namespace

TEST(GgufFileTest, ReadsHeaderMetadataAndTensors) {
    const GgufFile file = GgufFile::fromBytes(wellFormed(), "test.gguf");
    EXPECT_EQ(file.version(), 3u);
    EXPECT_EQ(file.alignment(), 32u);
    EXPECT_EQ(file.metadata().string("general.architecture"), "llama");
    EXPECT_EQ(file.metadata().strings("tokenizer.ggml.tokens"), (std::vector<std::string>{"a", "bc"}));
    ASSERT_EQ(file.tensors().size(), 1u);
    const auto& info = file.tensor("w");
    EXPECT_EQ(info.type.name, std::string("Q8_0"));
    EXPECT_EQ(info.elementCount, 64u);
    EXPECT_EQ(info.byteSize, 68u);
    EXPECT_EQ(info.fileOffset, file.dataOffset());
    const std::vector<float> values = file.dequantize("w");
    ASSERT_EQ(values.size(), 64u);
    EXPECT_EQ(values[0], -8.0f);
    EXPECT_EQ(values[31], 7.5f);
    EXPECT_EQ(values[32], -8.0f);
}

TEST(GgufFileTest, TypedGettersNameTheKeyAndType) {
    const GgufFile file = GgufFile::fromBytes(wellFormed(), "test.gguf");
    EXPECT_THROW(file.metadata().unsignedValue("general.architecture"), GgufError);
    try {
        file.metadata().number("llama.block_count");
        FAIL();
    } catch (const GgufError& error) {
        EXPECT_NE(std::string(error.what()).find("no metadata `llama.block_count`"), std::string::npos) << error.what();
    }
    EXPECT_FALSE(file.metadata().optionalNumber("llama.block_count").has_value());
}

TEST(GgufFileTest, RefusesEachKindOfDamageByName) {
    // Each case: the bytes and a phrase the message must hold.
    std::vector<std::pair<std::vector<uint8_t>, std::string>> cases;
    cases.push_back({{}, "it is empty"});
    cases.push_back({{'P', 'K', 3, 4, 0, 0}, "starts with bytes 50 4B 03 04"});
    cases.push_back({Builder().header(1, 0, 0).bytes, "version 1"});
    cases.push_back({Builder().header(0x03000000, 0, 0).bytes, "big-endian"});
    cases.push_back({Builder().header(3, 0, 1 << 30).bytes, "claims 1073741824 metadata entries"});
    cases.push_back({Builder().header(3, 0, 1).string("k").put<uint32_t>(13).bytes, "type 13"});
    cases.push_back({Builder().header(3, 0, 1).string("k").put<uint32_t>(8).put<uint64_t>(1000).bytes,
                     "needs 1000 bytes"});
    cases.push_back({Builder().header(3, 0, 1).string("k").put<uint32_t>(7).put<uint8_t>(2).bytes, "BOOL holds 2"});
    cases.push_back({Builder().header(3, 0, 1).string("k").put<uint32_t>(9).put<uint32_t>(4).put<uint64_t>(1000).bytes,
                     "cannot fit"});
    cases.push_back({Builder().header(3, 0, 2).string("k").put<uint32_t>(0).put<uint8_t>(1).string("k")
                         .put<uint32_t>(0).put<uint8_t>(1).bytes, "appears twice"});
    cases.push_back({Builder().header(3, 0, 1).string("general.alignment").put<uint32_t>(4).put<uint32_t>(48).bytes,
                     "power of two"});
    cases.push_back({Builder().header(3, 1, 0).tensor("w", {64}, 99, 0).bytes, "ggml type 99"});
    cases.push_back({Builder().header(3, 1, 0).tensor("w", {}, 0, 0).bytes, "0 dimensions"});
    cases.push_back({Builder().header(3, 1, 0).tensor("w", {33}, 8, 0).bytes, "not a multiple of Q8_0's block of 32"});
    cases.push_back({Builder().header(3, 1, 0).tensor("w", {1ull << 40, 1ull << 40}, 0, 0).bytes, "dimension 1"});
    cases.push_back({Builder().header(3, 1, 0).tensor("w", {8}, 0, 4).bytes, "not a multiple of the alignment"});
    cases.push_back({Builder().header(3, 1, 0).tensor("w", {64}, 0, 0).padTo(32).bytes, "would end past"});
    cases.push_back({Builder().header(3, 1, 0).tensor(std::string(65, 'x'), {8}, 0, 0).bytes, "at most 64"});
    for (auto& [bytes, phrase] : cases) {
        const std::string message = refusal(bytes);
        EXPECT_NE(message.find(phrase), std::string::npos) << "wanted `" << phrase << "` in: " << message;
        EXPECT_NE(message.find("test.gguf"), std::string::npos) << message;
    }
}

TEST(GgufFileTest, TruncationAnywhereIsRefusedNotRead) {
    const std::vector<uint8_t> whole = wellFormed();
    for (size_t size = 0; size < whole.size(); ++size) {
        const std::string message = refusal({whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(size)});
        EXPECT_NE(message, "(accepted)") << "a file cut to " << size << " bytes was accepted";
    }
}

TEST(GgufFileTest, ATypeKvscopeDoesNotReadIsRefusedByNameWithTheList) {
    Builder b;
    // IQ2_XXS (66 bytes per 256 values): llama.cpp writes it only with an importance matrix.
    b.header(3, 1, 0).tensor("blk.0.ffn_down.weight", {256}, 16, 0).padTo(32);
    b.bytes.resize(b.bytes.size() + 66);
    const GgufFile file = GgufFile::fromBytes(b.bytes, "test.gguf");
    try {
        file.dequantize("blk.0.ffn_down.weight");
        FAIL();
    } catch (const GgufError& error) {
        const std::string message = error.what();
        EXPECT_NE(message.find("as IQ2_XXS, which kvscope does not read"), std::string::npos) << message;
        EXPECT_NE(message.find(BlockType::readNames()), std::string::npos) << message;
    }
}

TEST(GgufFileTest, ReadsTheTypesTheIssueNames) {
    EXPECT_EQ(BlockType::readNames(), "F32, F16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, BF16");
    for (const BlockType* type : BlockType::all()) {
        const auto* traits = BlockType::ggmlType(type->id());
        ASSERT_NE(traits, nullptr);
        EXPECT_EQ(traits->typeSize, type->typeSize());
    }
    EXPECT_EQ(BlockType::find("q4_1")->id(), 3u);
    EXPECT_EQ(BlockType::find(16u), nullptr);
}
