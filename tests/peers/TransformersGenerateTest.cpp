// SPDX-License-Identifier: GPL-3.0-or-later
// Real Transformers as the oracle of the model path: tiny random Llama, Qwen3, Gemma 3 (sliding and full
// layers) and Qwen3-Next (linear attention, gated attention, experts) models saved by the installed release's
// save_pretrained, then generate() on a DynamicCache (transformers_generate.py). kvscope loads the same
// checkpoint and, token by token on its own DynamicCache, must give the same greedy tokens, the same logits
// (1e-4) and at every step each layer's cached length, the mask sizes of the next query and the keys and values
// it holds; a linear-attention layer its convolution window and recurrent state.
#include "ModelTestHelpers.h"
#include "kvscope/cache/AttentionLayer.h"
#include "kvscope/cache/DynamicCache.h"
#include "kvscope/cache/LinearAttentionLayer.h"
#include "kvscope/model/ModelCache.h"
#include "kvscope/model/ModelLoader.h"

#include <ATen/ATen.h>
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <gtest/gtest.h>
#include <iostream>
#include <nlohmann/json.hpp>

using kvscope::model::ModelLoader;
using kvscope::testing::TemporaryDirectory;

namespace {

const std::vector<std::string> kCases = {"llama", "llama-tied-llama3", "qwen3", "gemma3_text", "qwen3_next"};

at::Tensor tensorOf(const nlohmann::json& value) {
    const std::vector<double> data = value.at("data").get<std::vector<double>>();
    const std::vector<float> values(data.begin(), data.end());
    return at::tensor(values, at::kFloat).reshape(value.at("shape").get<std::vector<int64_t>>());
}

/// The bar for a stored tensor: 1e-5 of its largest magnitude (at least that much), 5e-5 in a model with
/// linear-attention layers. float32 computations in another order part by a few ulps; Transformers' chunked
/// delta rule over a prefill against kvscope's recurrence parts by more, which the layers after them carry at
/// the tensor's scale: Qwen3-Next's attention keys differed by 1.0e-5 to 1.1e-5 of their largest on an AVX-512
/// processor (Zen 4) with each choice of LibTorch's and MKL's instruction sets, under 1e-5 on an AVX2 one.
double storedTolerance(const at::Tensor& expected, bool linearAttention) {
    return (linearAttention ? 5e-5 : 1e-5) * std::max(1.0, expected.abs().max().item<double>());
}

at::Tensor rowOf(const nlohmann::json& values) {
    const std::vector<double> data = values.get<std::vector<double>>();
    return at::tensor(std::vector<float>(data.begin(), data.end()), at::kFloat);
}

} // namespace

TEST(TransformersGenerateTest, StepByStepAsTheInstalledRelease) {
    TemporaryDirectory directory("kvscope-generate");
    const std::filesystem::path peers = std::filesystem::path(KVSCOPE_SOURCE_DIR) / "tests" / "peers";
    std::string command = "'" + (peers / "peer-python.sh").string() + "' '" +
                          (peers / "transformers_generate.py").string() + "' '" + directory.path().string() + "'";
    for (const std::string& name : kCases) {
        command += " " + name;
    }
    ASSERT_EQ(std::system(command.c_str()), 0) << "the peer (transformers_generate.py) failed: " << command;

    for (const std::string& name : kCases) {
        SCOPED_TRACE(name);
        const std::filesystem::path folder = directory.path() / name;
        std::ifstream in(folder / "generate.json");
        const nlohmann::json record = nlohmann::json::parse(in);
        const std::string peer = record.at("peer").get<std::string>() + " " + record.at("model_class").get<std::string>();
        const auto model = ModelLoader::fromCheckpoint(folder);
        kvscope::model::ModelCache cache(std::make_unique<kvscope::cache::DynamicCache>(model->config()));

        at::Tensor input = at::tensor(record.at("prompt").get<std::vector<int64_t>>(), at::kLong).unsqueeze(0);
        const std::vector<int64_t> tokens = record.at("tokens").get<std::vector<int64_t>>();
        const nlohmann::json& steps = record.at("steps");
        ASSERT_EQ(steps.size(), tokens.size());
        double worst = 0.0;
        const nlohmann::json& lengths = steps.at(0).at("seq_length");
        const bool hasLinearLayers = std::any_of(lengths.begin(), lengths.end(), [](const nlohmann::json& n) { return n.is_null(); });
        for (size_t step = 0; step < steps.size(); ++step) {
            const std::string where = peer + ", step " + std::to_string(step);
            const nlohmann::json& expected = steps[step];
            const at::Tensor logits = model->forwardLast(input, &cache).reshape({-1});
            const double difference = kvscope::testing::maxAbsDifference(logits, rowOf(expected.at("logits")));
            worst = std::max(worst, difference);
            ASSERT_LE(difference, 1e-4) << where << ": max |logit - peer| " << difference;
            ASSERT_EQ(logits.argmax().item<int64_t>(), tokens[step]) << where << ": greedy token";
            const kvscope::cache::Cache& held = cache.selfAttention();
            ASSERT_EQ(held.size(), expected.at("seq_length").size()) << where << ": layers";
            for (size_t layer = 0; layer < held.size(); ++layer) {
                const std::string at = where + ", layer " + std::to_string(layer);
                if (expected.at("seq_length")[layer].is_null()) {
                    // Linear attention: the convolution's last inputs and the delta rule's state.
                    const auto* linear = held.layer(layer).asLinearAttention();
                    ASSERT_NE(linear, nullptr) << at << ": a linear-attention layer in the release";
                    const at::Tensor conv = tensorOf(expected.at("conv_states")[layer]);
                    const at::Tensor recurrent = tensorOf(expected.at("recurrent_states")[layer]);
                    ASSERT_EQ(linear->convStates().sizes(), conv.sizes()) << at << ": conv states";
                    EXPECT_LE(kvscope::testing::maxAbsDifference(linear->convStates(), conv), storedTolerance(conv, hasLinearLayers))
                        << at << ": conv states";
                    ASSERT_EQ(linear->recurrentStates().sizes(), recurrent.sizes()) << at << ": recurrent states";
                    EXPECT_LE(kvscope::testing::maxAbsDifference(linear->recurrentStates(), recurrent), storedTolerance(recurrent, hasLinearLayers))
                        << at << ": recurrent states";
                    continue;
                }
                EXPECT_EQ(held.seqLength(static_cast<int64_t>(layer)), expected.at("seq_length")[layer].get<int64_t>())
                    << at << ": seq length";
                const auto sizes = held.maskSizes(1, static_cast<int64_t>(layer));
                EXPECT_EQ(sizes.kvLength, expected.at("mask_sizes")[layer][0].get<int64_t>()) << at << ": kv_length";
                EXPECT_EQ(sizes.kvOffset, expected.at("mask_sizes")[layer][1].get<int64_t>()) << at << ": kv_offset";
                const auto* attention = held.layer(layer).asAttention();
                ASSERT_NE(attention, nullptr) << at;
                const at::Tensor keys = tensorOf(expected.at("keys")[layer]);
                const at::Tensor values = tensorOf(expected.at("values")[layer]);
                ASSERT_EQ(attention->keys().sizes(), keys.sizes()) << at << ": stored keys";
                EXPECT_LE(kvscope::testing::maxAbsDifference(attention->keys(), keys), storedTolerance(keys, hasLinearLayers)) << at << ": stored keys";
                EXPECT_LE(kvscope::testing::maxAbsDifference(attention->values(), values), storedTolerance(values, hasLinearLayers))
                    << at << ": stored values";
            }
            input = at::tensor({tokens[step]}, at::kLong).unsqueeze(0);
        }
        // The logits are not vanishing: 1e-4 is small next to them.
        EXPECT_GT(rowOf(steps[0].at("logits")).abs().max().item<double>(), 0.5);
        std::cout << name << " (" << peer << "): " << steps.size() << " steps, max |logit - peer| " << worst << "\n";
    }
}
