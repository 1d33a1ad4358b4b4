// SPDX-License-Identifier: GPL-3.0-or-later
// GgufCheckpoint's config from a file's metadata alone (files written in memory, no tensors): Gemma 2 and 3 as
// llama.cpp fills in what their converter leaves out, against literal tables; and the refusals (an architecture
// kvscope does not read, a layer count no model has).
#include "kvscope/model/GgufCheckpoint.h"

#include "GgufTestWriter.h"
#include "ModelTestHelpers.h"
#include "kvscope/model/ModelError.h"

#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <variant>

using kvscope::model::GgufCheckpoint;

namespace {

using Value = std::variant<uint32_t, float, std::string>;

/// A GGUF file of `metadata` only (uint32, float32 and string values), written to `directory`.
std::filesystem::path metadataFile(const kvscope::testing::TemporaryDirectory& directory,
                                   const std::map<std::string, Value>& metadata) {
    kvscope::testing::GgufTestWriter writer;
    writer.header(3, 0, metadata.size());
    for (const auto& [key, value] : metadata) {
        writer.string(key);
        if (const auto* number = std::get_if<uint32_t>(&value)) {
            writer.put<uint32_t>(4).put(*number);
        } else if (const auto* real = std::get_if<float>(&value)) {
            writer.put<uint32_t>(6).put(*real);
        } else {
            writer.put<uint32_t>(8).string(std::get<std::string>(value));
        }
    }
    const std::filesystem::path path = directory.path() / "model.gguf";
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(writer.bytes.data()),
                                                static_cast<std::streamsize>(writer.bytes.size()));
    return path;
}

/// Gemma's metadata as convert_hf_to_gguf writes it: `layers` blocks of 8 heads of 256 over 2304 (Gemma 2 2B's
/// shape), plus `extra`.
std::map<std::string, Value> gemma(const std::string& arch, uint32_t layers, std::map<std::string, Value> extra = {}) {
    std::map<std::string, Value> metadata = {
        {"general.architecture", arch},
        {arch + ".block_count", layers},
        {arch + ".embedding_length", uint32_t{2304}},
        {arch + ".feed_forward_length", uint32_t{9216}},
        {arch + ".attention.head_count", uint32_t{8}},
        {arch + ".attention.head_count_kv", uint32_t{4}},
        {arch + ".attention.key_length", uint32_t{256}},
        {arch + ".attention.layer_norm_rms_epsilon", 1e-6f},
        {arch + ".vocab_size", uint32_t{256000}},
    };
    metadata.insert(extra.begin(), extra.end());
    return metadata;
}

std::string refusalInGgufCheckpoint(const std::map<std::string, Value>& metadata) {
    const kvscope::testing::TemporaryDirectory directory("kvscope-gguf-checkpoint");
    try {
        GgufCheckpoint checkpoint(metadataFile(directory, metadata));
    } catch (const kvscope::model::ModelError& error) {
        return error.what();
    }
    return "read";
}

} // namespace

TEST(GgufCheckpointTest, GemmaTakesWhatItsMetadataLeavesOutFromLlamaCpp) {
    const kvscope::testing::TemporaryDirectory directory("kvscope-gguf-checkpoint");
    // Gemma 2: alternating sliding (4096 unless given) and full layers, soft-capping 50/30 unless given, queries
    // scaled by the head size.
    const GgufCheckpoint two(metadataFile(directory, gemma("gemma2", 4, {{"gemma2.attention.sliding_window", uint32_t{4096}},
                                                                         {"gemma2.final_logit_softcapping", 20.0f}})));
    EXPECT_EQ(two.config().modelType, "gemma2");
    EXPECT_EQ(*two.config().layerTypes, (std::vector<std::string>{"sliding_attention", "full_attention",
                                                                  "sliding_attention", "full_attention"}));
    EXPECT_EQ(two.config().slidingWindow, 4096);
    EXPECT_EQ(two.config().queryPreAttnScalar, 256.0);
    EXPECT_EQ(two.config().attnLogitSoftcapping, 50.0);
    EXPECT_EQ(two.config().finalLogitSoftcapping, 20.0);
    EXPECT_FALSE(two.config().hiddenAct.has_value()) << "Gemma's own GELU, not llama's SiLU";
    // The 27B models (46 layers for Gemma 2) scale by hidden_size / heads: their query_pre_attn_scalar.
    const kvscope::testing::TemporaryDirectory other("kvscope-gguf-checkpoint");
    EXPECT_EQ(GgufCheckpoint(metadataFile(other, gemma("gemma2", 46))).config().queryPreAttnScalar, 2304.0 / 8);
    // Gemma 3: five sliding layers to one full one, a local rotary base of 10000; none sliding without a window.
    const kvscope::testing::TemporaryDirectory third("kvscope-gguf-checkpoint");
    const GgufCheckpoint three(metadataFile(third, gemma("gemma3", 7, {{"gemma3.attention.sliding_window", uint32_t{512}},
                                                                       {"gemma3.rope.freq_base", 1000000.0f}})));
    EXPECT_EQ(three.config().modelType, "gemma3_text");
    std::vector<std::string> expected(7, "sliding_attention");
    expected[5] = "full_attention";
    EXPECT_EQ(*three.config().layerTypes, expected);
    EXPECT_EQ(three.config().slidingWindow, 512);
    EXPECT_EQ(three.config().ropeLocalBaseFreq, 10000.0);
    EXPECT_EQ(three.config().ropeTheta, 1000000.0);
    EXPECT_FALSE(three.config().attnLogitSoftcapping.has_value());
    const kvscope::testing::TemporaryDirectory fourth("kvscope-gguf-checkpoint");
    const GgufCheckpoint noWindow(metadataFile(fourth, gemma("gemma3", 6)));
    EXPECT_EQ(*noWindow.config().layerTypes, std::vector<std::string>(6, "full_attention"));
    EXPECT_FALSE(noWindow.config().slidingWindow.has_value());
}

TEST(GgufCheckpointTest, RefusesArchitecturesItDoesNotReadAndImpossibleLayerCounts) {
    std::map<std::string, Value> mamba = gemma("gemma2", 4);
    mamba["general.architecture"] = std::string("mamba");
    EXPECT_NE(refusalInGgufCheckpoint(mamba).find("kvscope reads GGUF models of these architectures: llama, qwen2, qwen3, phi3, "
                                  "gemma2, gemma3"),
              std::string::npos)
        << refusalInGgufCheckpoint(mamba);
    EXPECT_NE(refusalInGgufCheckpoint(gemma("gemma2", 1000000000)).find("`gemma2.block_count` is 1000000000; a model has 1 to 65536"),
              std::string::npos)
        << refusalInGgufCheckpoint(gemma("gemma2", 1000000000));
    EXPECT_NE(refusalInGgufCheckpoint(gemma("gemma2", 0)).find("block_count` is 0"), std::string::npos);
}
