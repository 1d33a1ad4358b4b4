// SPDX-License-Identifier: GPL-3.0-or-later
// Checkpoints of the Llama, Mistral, Qwen2 and Gemma families, written by the test in f32, f16 and
// bf16 (single file and sharded), load to the logits of the built-in model with the same weights.
#include "kvscope/model/ModelError.h"
#include "kvscope/model/ModelLoader.h"

#include "ModelTestHelpers.h"
#include "SafetensorsTestWriter.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using kvscope::config::ModelConfig;
using kvscope::model::ModelError;
using kvscope::model::ModelLoader;
using kvscope::testing::SafetensorsTestWriter;
using kvscope::testing::TemporaryDirectory;

namespace {

nlohmann::json familyConfig(const std::string& type) {
    nlohmann::json config = {{"model_type", type},       {"hidden_size", 32},    {"intermediate_size", 48},
                             {"num_hidden_layers", 2},   {"num_attention_heads", 4}, {"num_key_value_heads", 2},
                             {"vocab_size", 300},        {"rms_norm_eps", 1e-6}, {"rope_theta", 10000.0}};
    if (type == "mistral") {
        config["sliding_window"] = 4;
    }
    if (type == "qwen2") {
        config["sliding_window"] = 4096;
        config["use_sliding_window"] = false;
        config["tie_word_embeddings"] = false;
    }
    if (type == "gemma") {
        config["head_dim"] = 16;
        config["hidden_act"] = "gelu";
    }
    return config;
}

at::Tensor sampleIds() { return at::tensor({256, 10, 299, 42, 7, 7, 128, 3, 200}, at::kLong).unsqueeze(0); }

std::string loadRefusal(const std::filesystem::path& directory) {
    try {
        ModelLoader::fromCheckpoint(directory);
    } catch (const ModelError& error) {
        return error.what();
    }
    return "";
}

} // namespace

TEST(ModelLoaderTest, CheckpointsMatchTheBuiltinModelWithTheSameWeights) {
    TemporaryDirectory directory("kvscope-loader");
    for (const std::string& type : std::vector<std::string>{"llama", "mistral", "qwen2", "gemma"}) {
        const nlohmann::json json = familyConfig(type);
        const ModelConfig config = ModelConfig::fromJson(json);
        const auto builtin = ModelLoader::builtin(config, 9);
        if (type == "qwen2") {
            EXPECT_TRUE(builtin->parameters().contains("model.layers.1.self_attn.k_proj.bias"));
        }
        if (type == "gemma") {
            EXPECT_FALSE(builtin->parameters().contains("lm_head.weight")); // tied
        }
        for (at::ScalarType dtype : {at::kFloat, at::kHalf, at::kBFloat16}) {
            for (int shards : {1, 3}) {
                SCOPED_TRACE(type + " " + kvscope::model::SafetensorsWriter::dtypeName(dtype) + " shards " + std::to_string(shards));
                const auto folder =
                    directory.path() / (type + kvscope::model::SafetensorsWriter::dtypeName(dtype) + std::to_string(shards));
                SafetensorsTestWriter::writeCheckpoint(folder, json, builtin->parameters().tensors(), dtype, shards);
                const auto loaded = ModelLoader::fromCheckpoint(folder);
                // The same weights as stored: rounded through the checkpoint's dtype.
                const auto expected =
                    ModelLoader::fromParameters(config, builtin->parameters().roundedThrough(dtype));
                const at::Tensor logits = loaded->forward(sampleIds(), nullptr);
                EXPECT_EQ(logits.sizes(), at::IntArrayRef({1, 9, 300}));
                EXPECT_LE(kvscope::testing::maxAbsDifference(logits, expected->forward(sampleIds(), nullptr)), 1e-5);
                if (dtype != at::kFloat) {
                    // Rounding moved the logits: the comparison above is not vacuous.
                    EXPECT_GT(kvscope::testing::maxAbsDifference(logits, builtin->forward(sampleIds(), nullptr)), 1e-6);
                }
            }
        }
    }
}

TEST(ModelLoaderTest, RefusesCheckpointsThatDoNotFit) {
    TemporaryDirectory directory("kvscope-loader");
    const nlohmann::json json = familyConfig("llama");
    const auto builtin = ModelLoader::builtin(ModelConfig::fromJson(json));
    auto tensors = builtin->parameters().tensors();

    auto missing = tensors;
    missing.erase("model.layers.1.mlp.up_proj.weight");
    SafetensorsTestWriter::writeCheckpoint(directory.path() / "missing", json, missing, at::kFloat);
    EXPECT_NE(loadRefusal(directory.path() / "missing").find("model.layers.1.mlp.up_proj.weight"), std::string::npos);

    auto extra = tensors;
    extra["model.layers.0.self_attn.q_norm.weight"] = at::ones({8});
    SafetensorsTestWriter::writeCheckpoint(directory.path() / "extra", json, extra, at::kFloat);
    EXPECT_NE(loadRefusal(directory.path() / "extra").find("q_norm"), std::string::npos);

    auto reshaped = tensors;
    reshaped["model.norm.weight"] = at::ones({31});
    SafetensorsTestWriter::writeCheckpoint(directory.path() / "reshaped", json, reshaped, at::kFloat);
    EXPECT_NE(loadRefusal(directory.path() / "reshaped").find("[31]"), std::string::npos)
        << loadRefusal(directory.path() / "reshaped");

    nlohmann::json gemma2 = json;
    gemma2["model_type"] = "gemma2";
    SafetensorsTestWriter::writeCheckpoint(directory.path() / "gemma2", gemma2, tensors, at::kFloat);
    EXPECT_NE(loadRefusal(directory.path() / "gemma2").find("llama, mistral, qwen2, gemma"), std::string::npos);

    kvscope::model::SafetensorsWriter::writeFile(directory.path() / "noconfig.safetensors", tensors, at::kFloat);
    std::filesystem::create_directories(directory.path() / "noconfig");
    std::filesystem::rename(directory.path() / "noconfig.safetensors", directory.path() / "noconfig" / "model.safetensors");
    EXPECT_NE(loadRefusal(directory.path() / "noconfig").find("config.json"), std::string::npos)
        << loadRefusal(directory.path() / "noconfig");
}

TEST(ModelLoaderTest, DevicesAreChecked) {
    EXPECT_EQ(ModelLoader::device(kvscope::config::ComputeDevice::Cpu), at::Device(at::kCPU));
    if (!at::hasCUDA()) {
        try {
            ModelLoader::device(kvscope::config::ComputeDevice::Cuda);
            FAIL() << "cuda accepted without CUDA";
        } catch (const ModelError& error) {
            EXPECT_NE(std::string(error.what()).find("allowed here: cpu"), std::string::npos);
        }
    }
}
