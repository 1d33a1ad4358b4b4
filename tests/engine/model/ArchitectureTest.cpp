// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/model/Architecture.h"
#include "kvscope/model/ModelError.h"

#include "ModelTestHelpers.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using kvscope::config::ModelConfig;
using kvscope::model::Activation;
using kvscope::model::Architecture;
using kvscope::model::AttentionKind;
using kvscope::model::ModelError;
using kvscope::model::ModelFamily;

namespace {

ModelConfig parse(const std::string& json) { return ModelConfig::fromJson(nlohmann::json::parse(json)); }

/// The ModelError message of building an architecture from `json`, or "" when it is accepted.
std::string refusal(const std::string& json) {
    try {
        Architecture architecture(parse(json));
    } catch (const ModelError& error) {
        return error.what();
    }
    return "";
}

} // namespace

TEST(ArchitectureTest, PresetPatterns) {
    EXPECT_EQ(Architecture(kvscope::testing::presetConfig("llama")).patternSummary(), "4 full_attention");
    EXPECT_EQ(Architecture(kvscope::testing::presetConfig("mistral")).patternSummary(), "4 sliding_attention");
    EXPECT_EQ(Architecture(kvscope::testing::presetConfig("gemma2")).patternSummary(),
              "(sliding_attention + full_attention) x 2");
    EXPECT_EQ(Architecture(kvscope::testing::presetConfig("gemma3")).patternSummary(),
              "5 sliding_attention + full_attention");
    EXPECT_EQ(Architecture(kvscope::testing::presetConfig("llama4")).patternSummary(),
              "3 chunked_attention + full_attention");
    EXPECT_EQ(Architecture(kvscope::testing::presetConfig("qwen3-next")).patternSummary(),
              "(3 linear_attention + full_attention) x 2");
    EXPECT_EQ(Architecture(kvscope::testing::presetConfig("gemma3n")).patternSummary(),
              "(2 sliding_attention + full_attention) x 2; last 3 share keys/values");
    EXPECT_EQ(Architecture(kvscope::testing::presetConfig("whisper")).patternSummary(),
              "2 full_attention; encoder 2 layers, cross-attention");
}

TEST(ArchitectureTest, FamilyConventions) {
    const Architecture gemma(kvscope::testing::presetConfig("gemma2"));
    EXPECT_EQ(gemma.family(), ModelFamily::Gemma);
    EXPECT_TRUE(gemma.normAddsOne());
    EXPECT_TRUE(gemma.scalesEmbeddings());
    EXPECT_TRUE(gemma.tiedEmbeddings());
    EXPECT_EQ(gemma.activation(), Activation::GeluTanh);
    EXPECT_DOUBLE_EQ(gemma.attentionScale(), 0.25); // query_pre_attn_scalar 16

    const Architecture qwen(parse(R"({"model_type": "qwen2", "hidden_size": 32, "num_attention_heads": 2,
                                      "sliding_window": 4096, "use_sliding_window": false})"));
    EXPECT_TRUE(qwen.qkvBias());
    EXPECT_FALSE(qwen.outputBias());
    EXPECT_FALSE(qwen.tiedEmbeddings());
    // Qwen2's window applies only with use_sliding_window.
    EXPECT_EQ(qwen.attentionKind(0), AttentionKind::FullAttention);

    const Architecture llama(parse(R"({"model_type": "llama", "attention_bias": true, "hidden_act": "gelu"})"));
    EXPECT_TRUE(llama.qkvBias());
    EXPECT_TRUE(llama.outputBias());
    EXPECT_EQ(llama.activation(), Activation::Gelu);
    // Gemma's "gelu" means the tanh approximation.
    EXPECT_EQ(Architecture(parse(R"({"model_type": "gemma", "hidden_act": "gelu"})")).activation(), Activation::GeluTanh);
}

TEST(ArchitectureTest, CheckpointFamilyFeatures) {
    const Architecture qwen3(
        parse(R"({"model_type": "qwen3", "hidden_size": 32, "num_attention_heads": 2})"));
    EXPECT_TRUE(qwen3.queryKeyNorms());
    EXPECT_FALSE(qwen3.qkvBias()); // unlike Qwen2
    EXPECT_FALSE(qwen3.normAddsOne());
    EXPECT_FALSE(qwen3.sandwichNorms());

    const Architecture gemma2(kvscope::testing::presetConfig("gemma2"));
    EXPECT_TRUE(gemma2.sandwichNorms());
    EXPECT_FALSE(gemma2.queryKeyNorms());
    EXPECT_FALSE(gemma2.usesLocalRotary(0));

    const Architecture gemma3(
        parse(R"({"model_type": "gemma3_text", "num_hidden_layers": 2, "sliding_window": 4,
                                        "sliding_window_pattern": 2, "rope_local_base_freq": 100.0})"));
    EXPECT_TRUE(gemma3.sandwichNorms());
    EXPECT_TRUE(gemma3.queryKeyNorms());
    EXPECT_TRUE(gemma3.usesLocalRotary(0));
    EXPECT_FALSE(gemma3.usesLocalRotary(1));
    EXPECT_DOUBLE_EQ(gemma3.localRopeTheta(), 100.0);

    const Architecture phi3(parse(R"({"model_type": "phi3", "hidden_size": 64, "num_attention_heads": 4,
                                      "partial_rotary_factor": 0.75})"));
    EXPECT_TRUE(phi3.fusedProjections());
    EXPECT_EQ(phi3.rotaryDim(), 12);
    EXPECT_FALSE(phi3.tiedEmbeddings());
    EXPECT_EQ(Architecture(parse(R"({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4})"))
                  .rotaryDim(),
              16);

    EXPECT_NE(refusal(R"({"rope_scaling": {"rope_type": "yarn", "factor": 4.0}})")
                  .find("`yarn` is not supported (allowed: "
                        "default, linear, llama3)"),
              std::string::npos);
    EXPECT_NE(refusal(R"({"rope_scaling": {"rope_type": "linear"}})").find("factor"), std::string::npos);
    EXPECT_NE(refusal(R"({"rope_scaling": {"rope_type": "llama3", "factor": 8, "low_freq_factor": 4,
                          "high_freq_factor": 1, "original_max_position_embeddings": 64}})")
                  .find("greater than low_freq_factor"),
              std::string::npos);
    EXPECT_NE(refusal(R"({"model_type": "llama", "partial_rotary_factor": 0.5})").find("phi3 and qwen3_next only"),
              std::string::npos);
    EXPECT_NE(refusal(R"({"model_type": "phi3", "attention_bias": true})").find("attention_bias"),
              std::string::npos);
}

TEST(ArchitectureTest, Qwen3NextTakesItsConfigClassDefaults) {
    // Qwen3NextConfig without the keys: a quarter of each head rotates, 512 experts (10 per token) on every
    // layer, every fourth layer full attention; (1 + w) norms, q/k norms and a gated attention output.
    const Architecture defaults(parse(R"({"model_type": "qwen3_next", "num_hidden_layers": 8, "hidden_size": 64,
                                          "num_attention_heads": 4, "head_dim": 32})"));
    EXPECT_EQ(defaults.family(), ModelFamily::Qwen3Next);
    EXPECT_EQ(defaults.rotaryDim(), 8);
    EXPECT_TRUE(defaults.normAddsOne());
    EXPECT_TRUE(defaults.queryKeyNorms());
    EXPECT_TRUE(defaults.gatedAttention());
    EXPECT_FALSE(defaults.scalesEmbeddings());
    EXPECT_EQ(defaults.numExperts(), 512);
    EXPECT_EQ(defaults.expertsPerToken(), 10);
    EXPECT_EQ(defaults.expertIntermediateSize(), 512);
    EXPECT_TRUE(defaults.normalizesExpertWeights());
    EXPECT_EQ(defaults.patternSummary(), "(3 linear_attention + full_attention) x 2");
    for (int64_t layer = 0; layer < 8; ++layer) {
        EXPECT_TRUE(defaults.hasSparseExperts(layer)) << layer;
    }

    // Which layers have experts: not in mlp_only_layers, and every decoder_sparse_step-th layer.
    struct Case {
        const char* settings;
        std::vector<bool> sparse;
    };
    const std::vector<Case> cases = {
        {R"("num_experts": 0)", {false, false, false, false}},
        {R"("num_experts": 4, "num_experts_per_tok": 2, "mlp_only_layers": [1, 2])", {true, false, false, true}},
        {R"("num_experts": 4, "num_experts_per_tok": 2, "decoder_sparse_step": 2)", {false, true, false, true}},
        {R"("num_experts": 4, "num_experts_per_tok": 1, "decoder_sparse_step": 3, "mlp_only_layers": [2])",
         {false, false, false, false}},
    };
    for (const Case& c : cases) {
        const Architecture arch(parse(std::string(R"({"model_type": "qwen3_next", "num_hidden_layers": 4, )") +
                                      R"("partial_rotary_factor": 1.0, )" + c.settings + "}"));
        EXPECT_EQ(arch.rotaryDim(), arch.headDim());
        for (int64_t layer = 0; layer < 4; ++layer) {
            EXPECT_EQ(arch.hasSparseExperts(layer), c.sparse[static_cast<size_t>(layer)]) << c.settings << ", layer " << layer;
        }
    }
    // Transformers 5 writes the factor inside rope_parameters.
    EXPECT_EQ(Architecture(parse(R"({"model_type": "qwen3_next", "head_dim": 16, "num_experts": 0,
                                     "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0,
                                                         "partial_rotary_factor": 0.5}})"))
                  .rotaryDim(),
              8);
    EXPECT_NE(refusal(R"({"model_type": "qwen3_next", "num_experts": 4, "num_experts_per_tok": 5})")
                  .find("`num_experts_per_tok` (5) must be at most `num_experts` (4)"),
              std::string::npos);
    EXPECT_NE(refusal(R"({"model_type": "llama", "num_experts": 8})").find("qwen3_next only"), std::string::npos);
    EXPECT_FALSE(Architecture(parse(R"({"model_type": "llama"})")).gatedAttention());
}

TEST(ArchitectureTest, DefaultLayerKindsFollowWindowAndChunk) {
    EXPECT_EQ(Architecture(parse(R"({"num_hidden_layers": 2, "sliding_window": 4})")).attentionKind(1),
              AttentionKind::SlidingAttention);
    EXPECT_EQ(Architecture(parse(R"({"num_hidden_layers": 2, "attention_chunk_size": 4})")).attentionKind(1),
              AttentionKind::ChunkedAttention);
    const Architecture mixed(parse(R"({"num_hidden_layers": 3, "sliding_window": 4, "attention_chunk_size": 8,
        "layer_types": ["sliding_attention", "chunked_attention", "hybrid"]})"));
    EXPECT_EQ(mixed.window(0), 4);
    EXPECT_EQ(mixed.window(1), 8);
    EXPECT_EQ(mixed.window(2), 0);
    EXPECT_TRUE(mixed.hasAttention(2));
    EXPECT_TRUE(mixed.hasLinearAttention(2));
}

TEST(ArchitectureTest, SharedLayersReuseTheLastNonSharedLayerOfTheirKind) {
    const Architecture gemma3n(kvscope::testing::presetConfig("gemma3n"));
    // [s, s, f | s, s, f]: the shared sliding layers read layer 1, the shared full layer layer 2.
    EXPECT_EQ(gemma3n.kvSourceLayer(2), 2);
    EXPECT_EQ(gemma3n.kvSourceLayer(3), 1);
    EXPECT_EQ(gemma3n.kvSourceLayer(4), 1);
    EXPECT_EQ(gemma3n.kvSourceLayer(5), 2);
    EXPECT_TRUE(gemma3n.isKvSource(1));
    EXPECT_TRUE(gemma3n.isKvSource(2));
    EXPECT_FALSE(gemma3n.isKvSource(0));
    EXPECT_TRUE(gemma3n.isKvShared(3));
}

TEST(ArchitectureTest, RefusalsNameTheProblem) {
    EXPECT_NE(refusal(R"({"model_type": "bert"})").find("allowed"), std::string::npos);
    EXPECT_NE(refusal(R"({"num_hidden_layers": 1, "layer_types": ["mamba"]})").find("mamba"), std::string::npos);
    EXPECT_NE(refusal(R"({"num_hidden_layers": 2, "layer_types": ["full_attention"]})").find("must match"),
              std::string::npos);
    EXPECT_NE(refusal(R"({"num_hidden_layers": 1, "layer_types": ["sliding_attention"]})").find("sliding_window"),
              std::string::npos);
    EXPECT_NE(refusal(R"({"num_hidden_layers": 1, "layer_types": ["chunked_attention"]})").find("attention_chunk_size"),
              std::string::npos);
    EXPECT_NE(refusal(R"({"num_attention_heads": 4, "num_key_value_heads": 3})").find("multiple"), std::string::npos);
    EXPECT_NE(refusal(R"({"num_hidden_layers": 2, "num_kv_shared_layers": 2})").find("num_kv_shared_layers"),
              std::string::npos);
    EXPECT_NE(refusal(R"({"num_hidden_layers": 2, "num_kv_shared_layers": 1,
                          "layer_types": ["full_attention", "sliding_attention"], "sliding_window": 4})")
                  .find("no earlier non-shared layer"),
              std::string::npos);
    EXPECT_NE(refusal(R"({"hidden_act": "relu2"})").find("relu2"), std::string::npos);
    EXPECT_NE(refusal(R"({"model_type": "whisper", "d_model": 64, "decoder_layers": 2})").find("encoder_layers"),
              std::string::npos);
}

TEST(ArchitectureTest, WhisperSizesComeFromTheDecoderFields) {
    const Architecture whisper(kvscope::testing::presetConfig("whisper"));
    EXPECT_TRUE(whisper.isEncoderDecoder());
    EXPECT_EQ(whisper.numLayers(), 2);
    EXPECT_EQ(whisper.hiddenSize(), 64);
    EXPECT_EQ(whisper.config().maxPositionEmbeddings, 448);
    EXPECT_EQ(whisper.config().encoderLayers, 2);
    EXPECT_EQ(whisper.config().maxSourcePositions, 16);
    // The new fields survive a round trip through toJson.
    const Architecture back(ModelConfig::fromJson(whisper.config().toJson()));
    EXPECT_EQ(back.config().encoderFfnDim, 128);
    EXPECT_EQ(back.numLayers(), 2);
}
