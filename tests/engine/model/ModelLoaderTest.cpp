// SPDX-License-Identifier: GPL-3.0-or-later
// Checkpoints of the Llama, Mistral, Qwen2 and Gemma families, written by the test in f32, f16 and
// bf16 (single file and sharded), load to the logits of the built-in model with the same weights;
// random checkpoints of every family, written by the Python reference (reference/), give the logits
// of its independent forward pass, recomputed and through a cache.
#include "kvscope/model/ModelLoader.h"

#include "ModelTestHelpers.h"
#include "SafetensorsTestWriter.h"
#include "kvscope/cache/DynamicCache.h"
#include "kvscope/cache/StaticCache.h"
#include "kvscope/model/ModelCache.h"
#include "kvscope/model/ModelError.h"

#include <ATen/ATen.h>
#include <cstdlib>
#include <fstream>
#include <gtest/gtest.h>
#include <iostream>
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

/// A python3 that imports torch (the one on PATH, else Debian's), or "" where none does.
std::string referencePython() {
    for (const std::string python : {"python3", "/usr/bin/python3"}) {
        if (std::system((python + " -c 'import torch' >/dev/null 2>&1").c_str()) == 0) {
            return python;
        }
    }
    return "";
}

/// Runs the reference's checkpoint writer for `cases` into `folder`/<case>; false when it fails.
bool writeReferenceCheckpoints(const std::string& python, const std::vector<std::string>& cases,
                               const std::filesystem::path& folder) {
    const std::filesystem::path script = std::filesystem::path(KVSCOPE_SOURCE_DIR) / "tests" / "engine" /
                                         "model" / "reference" / "write_checkpoint.py";
    std::string command = python + " '" + script.string() + "' '" + folder.string() + "'";
    for (const std::string& name : cases) {
        command += " " + name;
    }
    return std::system(command.c_str()) == 0;
}

/// A [1, tokens] or [1, tokens, vocab] tensor from the nested lists of reference.json.
at::Tensor tensorOf(const nlohmann::json& nested, at::ScalarType dtype) {
    std::vector<double> flat;
    std::vector<int64_t> shape;
    const nlohmann::json* level = &nested;
    while (level->is_array()) {
        shape.push_back(static_cast<int64_t>(level->size()));
        level = &level->front();
    }
    auto collect = [&flat](const nlohmann::json& node, auto&& self) -> void {
        if (node.is_array()) {
            for (const auto& child : node) {
                self(child, self);
            }
        } else {
            flat.push_back(node.get<double>());
        }
    };
    collect(nested, collect);
    return at::tensor(flat, at::kDouble).view(shape).to(dtype);
}

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
                // Matrices stay in the file's dtype (2 bytes per weight for f16/bf16), vectors are widened.
                EXPECT_EQ(loaded->parameters().get("model.embed_tokens.weight").scalar_type(), dtype);
                EXPECT_EQ(loaded->parameters().get("model.layers.1.mlp.down_proj.weight").scalar_type(),
                          dtype);
                EXPECT_EQ(loaded->parameters().get("model.norm.weight").scalar_type(), at::kFloat);
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

TEST(ModelLoaderTest, FamiliesMatchTheirHuggingFaceReference) {
    const std::string python = referencePython();
    if (python.empty()) {
        GTEST_SKIP() << "no python3 with torch (Debian: python3-torch) for the reference forward pass";
    }
    TemporaryDirectory directory("kvscope-families");
    const std::vector<std::string> families = {"llama-llama3-tied", "mistral-linear", "qwen2-tied",
                                               "qwen3",             "qwen3-untied-sliding", "gemma",
                                               "gemma2",            "gemma3_text",          "phi3"};
    ASSERT_TRUE(writeReferenceCheckpoints(python, families, directory.path()));
    for (const std::string& family : families) {
        SCOPED_TRACE(family);
        const auto folder = directory.path() / family;
        std::ifstream in(folder / "reference.json");
        const nlohmann::json reference = nlohmann::json::parse(in);
        const at::Tensor ids = tensorOf(reference.at("input_ids"), at::kLong);
        const at::Tensor expected = tensorOf(reference.at("logits"), at::kFloat);

        const auto model = ModelLoader::fromCheckpoint(folder);
        const double recomputed = kvscope::testing::maxAbsDifference(model->forward(ids, nullptr), expected);
        // Token by token through a dynamic cache, then a prefill and chunks through a static one.
        kvscope::model::ModelCache dynamic(std::make_unique<kvscope::cache::DynamicCache>(model->config()));
        const double stepped = kvscope::testing::maxAbsDifference(
            kvscope::testing::cachedLogits(*model, dynamic, ids, 1, 1), expected);
        kvscope::model::ModelCache fixed(
            std::make_unique<kvscope::cache::StaticCache>(model->config(), ids.size(1)));
        const double chunked = kvscope::testing::maxAbsDifference(
            kvscope::testing::cachedLogits(*model, fixed, ids, 4, 3), expected);
        EXPECT_LE(recomputed, 1e-4);
        EXPECT_LE(stepped, 1e-4);
        EXPECT_LE(chunked, 1e-4);
        // The logits are not vanishing: the tolerance is small next to them.
        EXPECT_GT(expected.abs().max().item<double>(), 0.5);
        std::cout << family << ": max |logit - reference| recomputed " << recomputed << ", token by token "
                  << stepped << ", static cache in chunks " << chunked << "\n";
    }
}

TEST(ModelLoaderTest, RopeScalingsOtherThanLinearAndLlama3AreRefusedByName) {
    TemporaryDirectory directory("kvscope-loader");
    nlohmann::json json = familyConfig("llama");
    const auto builtin = ModelLoader::builtin(ModelConfig::fromJson(json));
    for (const std::string type : {"yarn", "dynamic", "longrope", "su"}) {
        json["rope_scaling"] = {{"rope_type", type}, {"factor", 4.0}};
        SafetensorsTestWriter::writeCheckpoint(directory.path() / type, json, builtin->parameters().tensors(),
                                               at::kFloat);
        const std::string message = loadRefusal(directory.path() / type);
        EXPECT_NE(message.find("`" + type + "`"), std::string::npos) << message;
        EXPECT_NE(message.find("default, linear, llama3"), std::string::npos) << message;
    }
    // Phi-3's long-context configs name the type under the older key.
    nlohmann::json phi3 = familyConfig("llama");
    phi3["model_type"] = "phi3";
    phi3["rope_scaling"] = {{"type", "longrope"}, {"short_factor", {1.0, 1.0}}, {"long_factor", {2.0, 2.0}}};
    SafetensorsTestWriter::writeCheckpoint(directory.path() / "phi3", phi3, builtin->parameters().tensors(),
                                           at::kFloat);
    EXPECT_NE(loadRefusal(directory.path() / "phi3").find("`longrope`"), std::string::npos);

    json["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}};
    SafetensorsTestWriter::writeCheckpoint(directory.path() / "llama3", json, builtin->parameters().tensors(),
                                           at::kFloat);
    EXPECT_NE(loadRefusal(directory.path() / "llama3").find("low_freq_factor"), std::string::npos);
}

TEST(ModelLoaderTest, TiedOutputLayersUseTheEmbeddingAndUntiedOnesNeedTheirOwn) {
    TemporaryDirectory directory("kvscope-loader");
    nlohmann::json json = familyConfig("llama");
    json["tie_word_embeddings"] = true;
    const ModelConfig tied = ModelConfig::fromJson(json);
    const auto builtin = ModelLoader::builtin(tied, 4);
    EXPECT_FALSE(builtin->parameters().contains("lm_head.weight"));
    // A stored lm_head beside tied embeddings is ignored, as Transformers ties it over.
    auto tensors = builtin->parameters().tensors();
    tensors["lm_head.weight"] = at::randn({300, 32});
    SafetensorsTestWriter::writeCheckpoint(directory.path() / "tied", json, tensors, at::kFloat);
    const auto loaded = ModelLoader::fromCheckpoint(directory.path() / "tied");
    EXPECT_LE(kvscope::testing::maxAbsDifference(loaded->forward(sampleIds(), nullptr),
                                                 builtin->forward(sampleIds(), nullptr)),
              1e-6);

    json.erase("tie_word_embeddings");
    SafetensorsTestWriter::writeCheckpoint(directory.path() / "untied", json, builtin->parameters().tensors(),
                                           at::kFloat);
    const std::string message = loadRefusal(directory.path() / "untied");
    EXPECT_NE(message.find("no `lm_head.weight`"), std::string::npos) << message;
    EXPECT_NE(message.find("tie_word_embeddings is absent"), std::string::npos) << message;
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

    nlohmann::json llama4 = json;
    llama4["model_type"] = "llama4_text";
    SafetensorsTestWriter::writeCheckpoint(directory.path() / "llama4", llama4, tensors, at::kFloat);
    EXPECT_NE(loadRefusal(directory.path() / "llama4").find("qwen3, qwen3_next, gemma, gemma2, gemma3_text, phi3"),
              std::string::npos);

    // A Gemma 2 checkpoint without its feed-forward norms (a Gemma one relabelled) names them.
    nlohmann::json gemma2 = familyConfig("gemma");
    const auto gemma = ModelLoader::builtin(ModelConfig::fromJson(gemma2));
    gemma2["model_type"] = "gemma2";
    gemma2["sliding_window"] = 4;
    gemma2["query_pre_attn_scalar"] = 16;
    SafetensorsTestWriter::writeCheckpoint(directory.path() / "gemma2", gemma2, gemma->parameters().tensors(),
                                           at::kFloat);
    EXPECT_NE(loadRefusal(directory.path() / "gemma2").find("pre_feedforward_layernorm"), std::string::npos);

    nlohmann::json partial = json;
    partial["partial_rotary_factor"] = 0.5;
    SafetensorsTestWriter::writeCheckpoint(directory.path() / "partial", partial, tensors, at::kFloat);
    EXPECT_NE(loadRefusal(directory.path() / "partial").find("partial_rotary_factor"), std::string::npos);

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
