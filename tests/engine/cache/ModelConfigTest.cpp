// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/config/ModelConfig.h"

#include "kvscope/config/ConfigError.h"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>

namespace kvscope::config {
namespace {

using Types = std::vector<std::string>;

/// Passes when reading `document` throws a ConfigError whose message contains every fragment.
::testing::AssertionResult refusedConfig(const nlohmann::json& document,
                                         std::initializer_list<std::string> fragments) {
    try {
        (void)ModelConfig::fromJson(document);
    } catch (const ConfigError& error) {
        const std::string message = error.what();
        for (const std::string& fragment : fragments) {
            if (message.find(fragment) == std::string::npos) {
                return ::testing::AssertionFailure() << "message lacks \"" << fragment << "\": " << message;
            }
        }
        return ::testing::AssertionSuccess();
    } catch (const std::exception& error) {
        return ::testing::AssertionFailure() << "threw something else: " << error.what();
    }
    return ::testing::AssertionFailure() << "accepted " << document.dump();
}

TEST(ModelConfigTest, ReadsTheNestedTextConfig) {
    const auto document = nlohmann::json::parse(R"({
        "model_type": "gemma3",
        "vision_config": {"num_hidden_layers": 27},
        "num_hidden_layers": 99,
        "text_config": {
            "num_hidden_layers": 3,
            "layer_types": ["sliding_attention", "sliding_attention", "full_attention"],
            "sliding_window": 512,
            "hidden_size": 96,
            "num_attention_heads": 6,
            "num_key_value_heads": 2,
            "head_dim": 32,
            "intermediate_size": 256,
            "vocab_size": 1000,
            "max_position_embeddings": 8192,
            "rms_norm_eps": 1e-5,
            "rope_theta": 1000000.0
        }
    })");
    const ModelConfig config = ModelConfig::fromJson(document);
    EXPECT_EQ(config.modelType, "gemma3"); // from the outer document
    EXPECT_EQ(config.numHiddenLayers, 3);  // from text_config, not the outer 99
    EXPECT_EQ(config.layerTypes, (Types{"sliding_attention", "sliding_attention", "full_attention"}));
    EXPECT_EQ(config.slidingWindow, 512);
    EXPECT_FALSE(config.attentionChunkSize.has_value());
    EXPECT_FALSE(config.numKvSharedLayers.has_value());
    EXPECT_EQ(config.hiddenSize, 96);
    EXPECT_EQ(config.numAttentionHeads, 6);
    EXPECT_EQ(config.numKeyValueHeads, 2);
    EXPECT_EQ(config.headDim, 32);
    EXPECT_EQ(config.effectiveHeadDim(), 32);
    EXPECT_EQ(config.intermediateSize, 256);
    EXPECT_EQ(config.vocabSize, 1000);
    EXPECT_EQ(config.maxPositionEmbeddings, 8192);
    EXPECT_DOUBLE_EQ(config.rmsNormEps, 1e-5);
    EXPECT_DOUBLE_EQ(config.ropeTheta, 1e6);
}

TEST(ModelConfigTest, FlatConfigAndDefaults) {
    const ModelConfig config = ModelConfig::fromJson(nlohmann::json::parse(R"({"num_hidden_layers": 2})"));
    EXPECT_EQ(config.numHiddenLayers, 2);
    EXPECT_TRUE(config.modelType.empty());
    EXPECT_FALSE(config.layerTypes.has_value());
    EXPECT_FALSE(config.slidingWindow.has_value());
    EXPECT_EQ(config.hiddenSize, 64);
    EXPECT_EQ(config.numAttentionHeads, 4);
    EXPECT_EQ(config.numKeyValueHeads, 4); // defaults to the attention heads
    EXPECT_FALSE(config.headDim.has_value());
    EXPECT_EQ(config.effectiveHeadDim(), 16);
}

TEST(ModelConfigTest, KeyValueHeadsDefaultToTheAttentionHeads) {
    const ModelConfig config = ModelConfig::fromJson(nlohmann::json::parse(R"({"num_attention_heads": 8})"));
    EXPECT_EQ(config.numKeyValueHeads, 8);
}

TEST(ModelConfigTest, NullMeansAbsent) {
    const ModelConfig config = ModelConfig::fromJson(nlohmann::json::parse(
        R"({"sliding_window": null, "attention_chunk_size": null, "num_kv_shared_layers": null,
            "layer_types": null, "head_dim": null, "hidden_size": null})"));
    EXPECT_FALSE(config.slidingWindow.has_value());
    EXPECT_FALSE(config.attentionChunkSize.has_value());
    EXPECT_FALSE(config.numKvSharedLayers.has_value());
    EXPECT_FALSE(config.layerTypes.has_value());
    EXPECT_FALSE(config.headDim.has_value());
    EXPECT_EQ(config.hiddenSize, 64);
}

TEST(ModelConfigTest, WrongTypesAreRefusedNamingTheField) {
    EXPECT_TRUE(
        refusedConfig(nlohmann::json::parse(R"({"sliding_window": "4"})"), {"`sliding_window`", "\"4\""}));
    EXPECT_TRUE(
        refusedConfig(nlohmann::json::parse(R"({"sliding_window": 4.5})"), {"`sliding_window`", "4.5"}));
    EXPECT_TRUE(refusedConfig(nlohmann::json::parse(R"({"attention_chunk_size": true})"),
                              {"`attention_chunk_size`"}));
    EXPECT_TRUE(
        refusedConfig(nlohmann::json::parse(R"({"num_kv_shared_layers": [2]})"), {"`num_kv_shared_layers`"}));
    EXPECT_TRUE(
        refusedConfig(nlohmann::json::parse(R"({"layer_types": "full_attention"})"), {"`layer_types`"}));
    EXPECT_TRUE(refusedConfig(nlohmann::json::parse(R"({"layer_types": ["full_attention", 3]})"),
                              {"`layer_types`", "3"}));
    EXPECT_TRUE(refusedConfig(nlohmann::json::parse(R"({"num_hidden_layers": "two"})"),
                              {"`num_hidden_layers`", "two"}));
    EXPECT_TRUE(
        refusedConfig(nlohmann::json::parse(R"({"num_hidden_layers": -1})"), {"`num_hidden_layers`", "-1"}));
    EXPECT_TRUE(refusedConfig(nlohmann::json::parse(R"({"hidden_size": {"a": 1}})"), {"`hidden_size`"}));
    EXPECT_TRUE(refusedConfig(nlohmann::json::parse(R"({"rope_theta": "big"})"), {"`rope_theta`"}));
    EXPECT_TRUE(refusedConfig(nlohmann::json::parse(R"({"model_type": 5})"), {"`model_type`"}));
    EXPECT_TRUE(refusedConfig(nlohmann::json::parse(R"({"text_config": {"sliding_window": "x"}})"),
                              {"`sliding_window`"}));
    EXPECT_TRUE(refusedConfig(nlohmann::json::parse(R"([1, 2])"), {"JSON object", "array"}));
}

TEST(ModelConfigTest, FractionalIntegerFieldsAreRefused) {
    // `num_hidden_layers: 2.5` would make the reference's `range(num_hidden_layers)` fail; reading it
    // as 2 hides a broken config.
    EXPECT_TRUE(
        refusedConfig(nlohmann::json::parse(R"({"num_hidden_layers": 2.5})"), {"`num_hidden_layers`"}));
    EXPECT_TRUE(refusedConfig(nlohmann::json::parse(R"({"hidden_size": 64.5})"), {"`hidden_size`"}));
}

TEST(ModelConfigTest, DynamicLayerTypesInference) {
    ModelConfig config;
    config.numHiddenLayers = 2;
    EXPECT_EQ(config.dynamicLayerTypes(), (Types{"full_attention", "full_attention"}));
    config.slidingWindow = 4;
    EXPECT_EQ(config.dynamicLayerTypes(), (Types{"sliding_attention", "sliding_attention"}));
    config.slidingWindow = 0; // `0 or None` is None in the reference
    EXPECT_EQ(config.dynamicLayerTypes(), (Types{"full_attention", "full_attention"}));
    config.attentionChunkSize = 3;
    EXPECT_EQ(config.dynamicLayerTypes(), (Types{"sliding_attention", "sliding_attention"}));
    config.layerTypes = Types{"full_attention", "chunked_attention", "linear_attention"};
    EXPECT_EQ(config.dynamicLayerTypes(), (Types{"full_attention", "chunked_attention", "linear_attention"}));
}

TEST(ModelConfigTest, FamilyConfigClassesDeriveLayerTypes) {
    auto types = [](const char* json) {
        return *ModelConfig::fromJson(nlohmann::json::parse(json)).layerTypes;
    };
    const std::string s = "sliding_attention";
    const std::string f = "full_attention";
    // Gemma 2 alternates from a sliding layer; Gemma 3 repeats `sliding_window_pattern` (default 6).
    EXPECT_EQ(types(R"({"model_type": "gemma2", "num_hidden_layers": 3, "sliding_window": 4})"),
              (Types{s, f, s}));
    EXPECT_EQ(types(R"({"model_type": "gemma3_text", "num_hidden_layers": 7, "sliding_window": 4})"),
              (Types{s, s, s, s, s, f, s}));
    EXPECT_EQ(types(R"({"model_type": "gemma3_text", "num_hidden_layers": 4, "sliding_window_pattern": 2})"),
              (Types{s, f, s, f}));
    // Qwen2/3: sliding from `max_window_layers` on, and only with use_sliding_window.
    EXPECT_EQ(types(R"({"model_type": "qwen3", "num_hidden_layers": 3, "sliding_window": 4,
                        "use_sliding_window": true, "max_window_layers": 1})"),
              (Types{f, s, s}));
    const ModelConfig off = ModelConfig::fromJson(
        nlohmann::json::parse(R"({"model_type": "qwen3", "num_hidden_layers": 3, "sliding_window": 4})"));
    EXPECT_FALSE(off.slidingWindow);
    EXPECT_FALSE(off.layerTypes);
    // Qwen3-Next: every `full_attention_interval`-th layer (4 by default) is full attention, the rest linear.
    const std::string l = "linear_attention";
    EXPECT_EQ(types(R"({"model_type": "qwen3_next", "num_hidden_layers": 5})"), (Types{l, l, l, f, l}));
    EXPECT_EQ(types(R"({"model_type": "qwen3_next", "num_hidden_layers": 4, "full_attention_interval": 2})"),
              (Types{l, f, l, f}));
    EXPECT_TRUE(refusedConfig(nlohmann::json::parse(R"({"model_type": "qwen3_next", "full_attention_interval": 0})"),
                              {"`full_attention_interval`", "> 0"}));
    // Given layer types win.
    EXPECT_EQ(
        types(
            R"({"model_type": "gemma2", "num_hidden_layers": 2, "layer_types": ["full_attention", "full_attention"]})"),
        (Types{f, f}));
    EXPECT_TRUE(
        refusedConfig(nlohmann::json::parse(R"({"model_type": "gemma2", "num_hidden_layers": 100000000})"),
                      {"`num_hidden_layers`", "layer_types"}));
}

TEST(ModelConfigTest, RopeScalingIsReadFromEitherPlace) {
    const ModelConfig llama3 = ModelConfig::fromJson(nlohmann::json::parse(R"({"rope_scaling": {
        "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192}})"));
    ASSERT_TRUE(llama3.ropeScaling);
    EXPECT_EQ(llama3.ropeScaling->type, "llama3");
    EXPECT_EQ(llama3.ropeScaling->factor, 8.0);
    EXPECT_EQ(llama3.ropeScaling->originalMaxPositionEmbeddings, 8192);
    // The older `type` key, and "default" meaning none.
    EXPECT_EQ(
        ModelConfig::fromJson(nlohmann::json::parse(R"({"rope_scaling": {"type": "yarn", "factor": 4}})"))
            .ropeScaling->type,
        "yarn");
    EXPECT_FALSE(ModelConfig::fromJson(nlohmann::json::parse(R"({"rope_scaling": {"rope_type": "default"}})"))
                     .ropeScaling);
    // Newer configs: rope_parameters, per layer type for Gemma 3.
    const ModelConfig nested = ModelConfig::fromJson(nlohmann::json::parse(R"({"rope_parameters": {
        "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0},
        "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}})"));
    EXPECT_EQ(nested.ropeScaling->type, "linear");
    EXPECT_EQ(nested.ropeTheta, 1000000.0);
    EXPECT_EQ(nested.ropeLocalBaseFreq, 10000.0);
    // Gemma 3's released configs keep both bases at the top and only the types per layer type.
    const ModelConfig released = ModelConfig::fromJson(nlohmann::json::parse(R"({"rope_theta": 1000000.0,
        "rope_local_base_freq": 100.0, "rope_parameters": {"full_attention": {"factor": 8.0, "rope_type": "linear"},
        "sliding_attention": {"rope_type": "default"}}})"));
    EXPECT_EQ(released.ropeScaling->factor, 8.0);
    EXPECT_EQ(released.ropeTheta, 1000000.0);
    EXPECT_EQ(released.ropeLocalBaseFreq, 100.0);
    EXPECT_TRUE(refusedConfig(nlohmann::json::parse(R"({"rope_scaling": "linear"})"), {"`rope_scaling`"}));
    EXPECT_TRUE(refusedConfig(nlohmann::json::parse(R"({"rope_scaling": {"type": "linear", "factor": "x"}})"),
                              {"`factor`"}));
    EXPECT_TRUE(refusedConfig(nlohmann::json::parse(R"({"rope_scaling": {"factor": 2.0}})"), {"rope_type"}));
    // Round trip.
    const ModelConfig back = ModelConfig::fromJson(llama3.toJson());
    EXPECT_EQ(back.ropeScaling->highFreqFactor, 4.0);
}

TEST(ModelConfigTest, StaticLayerTypesInference) {
    ModelConfig config;
    config.numHiddenLayers = 2;
    EXPECT_EQ(config.staticLayerTypes(), (Types{"full_attention", "full_attention"}));
    config.attentionChunkSize = 3;
    EXPECT_EQ(config.staticLayerTypes(), (Types{"chunked_attention", "chunked_attention"}));
    config.slidingWindow = 0; // `is not None`: a zero window still makes the layers sliding
    EXPECT_EQ(config.staticLayerTypes(), (Types{"sliding_attention", "sliding_attention"}));
    config.layerTypes = Types{"full_attention"};
    EXPECT_EQ(config.staticLayerTypes(), (Types{"full_attention"}));
}

TEST(ModelConfigTest, SharedKvLayersAreDroppedLikePythonSlicing) {
    ModelConfig config;
    config.layerTypes = Types{"a", "b", "c", "d"};
    config.numKvSharedLayers = 2;
    EXPECT_EQ(config.dynamicLayerTypes(), (Types{"a", "b"}));
    EXPECT_EQ(config.staticLayerTypes(), (Types{"a", "b"}));
    config.numKvSharedLayers = 0; // types[:-0] is empty
    EXPECT_EQ(config.dynamicLayerTypes(), Types{});
    config.numKvSharedLayers = -1; // types[:1]
    EXPECT_EQ(config.dynamicLayerTypes(), (Types{"a"}));
    config.numKvSharedLayers = 9;
    EXPECT_EQ(config.dynamicLayerTypes(), Types{});
    config.numKvSharedLayers.reset();
    EXPECT_EQ(config.withoutSharedLayers({"x", "y"}), (Types{"x", "y"}));
}

TEST(ModelConfigTest, EffectiveHeadDimNeedsDivisibleHiddenSize) {
    ModelConfig config;
    config.hiddenSize = 100;
    config.numAttentionHeads = 3;
    try {
        (void)config.effectiveHeadDim();
        FAIL() << "an indivisible hidden size was accepted";
    } catch (const ConfigError& error) {
        EXPECT_NE(std::string(error.what()).find("100"), std::string::npos) << error.what();
    }
    config.headDim = 7;
    EXPECT_EQ(config.effectiveHeadDim(), 7);
}

TEST(ModelConfigTest, ToJsonRoundTrips) {
    ModelConfig config;
    config.modelType = "llama";
    config.numHiddenLayers = 5;
    config.layerTypes =
        Types{"full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention"};
    config.slidingWindow = 16;
    config.numKvSharedLayers = 1;
    config.headDim = 8;
    const ModelConfig back = ModelConfig::fromJson(config.toJson());
    EXPECT_EQ(back.modelType, "llama");
    EXPECT_EQ(back.numHiddenLayers, 5);
    EXPECT_EQ(back.layerTypes, config.layerTypes);
    EXPECT_EQ(back.slidingWindow, 16);
    EXPECT_EQ(back.numKvSharedLayers, 1);
    EXPECT_EQ(back.headDim, 8);
    EXPECT_FALSE(back.attentionChunkSize.has_value());
    EXPECT_FALSE(config.toJson().contains("attention_chunk_size"));

    // Qwen3-Next's experts and its rotary share (Transformers 5 writes the share inside rope_parameters).
    const ModelConfig next = ModelConfig::fromJson(nlohmann::json::parse(R"({"model_type": "qwen3_next",
        "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 16, "shared_expert_intermediate_size": 24,
        "norm_topk_prob": false, "decoder_sparse_step": 2, "mlp_only_layers": [0, 3],
        "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25}})"));
    EXPECT_EQ(next.partialRotaryFactor, 0.25);
    EXPECT_EQ(next.mlpOnlyLayers, (std::vector<int64_t>{0, 3}));
    const ModelConfig nextBack = ModelConfig::fromJson(next.toJson());
    EXPECT_EQ(nextBack.numExperts, 4);
    EXPECT_EQ(nextBack.numExpertsPerToken, 2);
    EXPECT_EQ(nextBack.moeIntermediateSize, 16);
    EXPECT_EQ(nextBack.sharedExpertIntermediateSize, 24);
    EXPECT_EQ(nextBack.normTopkProb, false);
    EXPECT_EQ(nextBack.decoderSparseStep, 2);
    EXPECT_EQ(nextBack.mlpOnlyLayers, next.mlpOnlyLayers);
    EXPECT_EQ(nextBack.partialRotaryFactor, 0.25);
    EXPECT_TRUE(refusedConfig(nlohmann::json::parse(R"({"mlp_only_layers": [1.5]})"), {"`mlp_only_layers`"}));
    EXPECT_TRUE(refusedConfig(nlohmann::json::parse(R"({"mlp_only_layers": 3})"), {"`mlp_only_layers`"}));
}

TEST(ModelConfigTest, FromFile) {
    const auto path = std::filesystem::temp_directory_path() / "kvscope_model_config_test.json";
    {
        std::ofstream out(path);
        out << R"({"num_hidden_layers": 7, "sliding_window": 32})";
    }
    const ModelConfig config = ModelConfig::fromFile(path);
    EXPECT_EQ(config.numHiddenLayers, 7);
    EXPECT_EQ(config.slidingWindow, 32);
    {
        std::ofstream out(path);
        out << R"({"num_hidden_layers": )";
    }
    try {
        (void)ModelConfig::fromFile(path);
        FAIL() << "truncated JSON was accepted";
    } catch (const ConfigError& error) {
        EXPECT_NE(std::string(error.what()).find(path.string()), std::string::npos) << error.what();
        EXPECT_NE(std::string(error.what()).find("not valid JSON"), std::string::npos) << error.what();
    }
    {
        std::ofstream out(path);
        out << R"({"sliding_window": "big"})";
    }
    try {
        (void)ModelConfig::fromFile(path);
        FAIL() << "a wrong type was accepted";
    } catch (const ConfigError& error) {
        EXPECT_NE(std::string(error.what()).find("`sliding_window`"), std::string::npos) << error.what();
    }
    std::filesystem::remove(path);
    EXPECT_THROW((void)ModelConfig::fromFile(path), ConfigError);
}

} // namespace
} // namespace kvscope::config
