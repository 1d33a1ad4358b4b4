// SPDX-License-Identifier: GPL-3.0-or-later
// The built-in decoder over real caches: logits of cached decoding (token by token and in chunks,
// with and without left padding) equal those of recomputing the whole sequence without a cache; a long prompt's MLP
// in slices gives the unsliced logits.
#include "kvscope/cache/DynamicCache.h"
#include "kvscope/cache/EncoderDecoderCache.h"
#include "kvscope/cache/LinearAttentionLayer.h"
#include "kvscope/cache/StaticCache.h"
#include "kvscope/model/Decoder.h"
#include "kvscope/model/ModelCache.h"
#include "kvscope/model/ModelError.h"
#include "kvscope/model/ModelLoader.h"

#include "ModelTestHelpers.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using kvscope::config::ModelConfig;
using kvscope::model::ModelCache;
using kvscope::model::ModelLoader;
using kvscope::testing::cachedLogits;
using kvscope::testing::maxAbsDifference;
using kvscope::testing::presetConfig;

namespace {

constexpr double kTolerance = 1e-4;
// Qwen3-Next's linear attention carries a recurrent state: fed in steps it sums its updates in another order
// than the whole prompt does, and how far apart the two land depends on the BLAS kernel (OpenBLAS's Haswell
// kernels, which the test presets pin: 1.6e-4; its SkylakeX ones: under 1e-4).
constexpr double kRecurrentTolerance = 3e-4;

at::Tensor randomIds(int64_t batch, int64_t length, uint64_t seed) {
    auto generator = at::make_generator<at::CPUGeneratorImpl>(seed);
    return at::randint(0, 256, {batch, length}, generator, at::kLong);
}

std::unique_ptr<ModelCache> dynamicCache(const ModelConfig& config) {
    return std::make_unique<ModelCache>(std::make_unique<kvscope::cache::DynamicCache>(config));
}

std::unique_ptr<ModelCache> staticCache(const ModelConfig& config, int64_t length) {
    return std::make_unique<ModelCache>(std::make_unique<kvscope::cache::StaticCache>(config, length));
}

/// Qwen3-Next's layers: a hybrid one (kvscope's: linear and full attention summed), a linear and a gated full
/// one, each MLP a mixture of 4 experts (2 a token) beside a shared expert.
ModelConfig hybridConfig() {
    return ModelConfig::fromJson(nlohmann::json::parse(R"({
        "model_type": "qwen3_next", "num_hidden_layers": 3, "hidden_size": 32, "intermediate_size": 64,
        "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 16, "vocab_size": 259,
        "layer_types": ["hybrid", "linear_attention", "full_attention"],
        "linear_conv_kernel_dim": 3, "linear_num_key_heads": 1, "linear_num_value_heads": 2,
        "linear_key_head_dim": 8, "linear_value_head_dim": 8, "num_experts": 4, "num_experts_per_tok": 2,
        "moe_intermediate_size": 16, "shared_expert_intermediate_size": 16})"));
}

} // namespace

TEST(DecoderTest, SameSeedSameWeightsOtherSeedOtherLogits) {
    const ModelConfig config = presetConfig("llama");
    const at::Tensor ids = randomIds(1, 6, 1);
    const at::Tensor a = ModelLoader::builtin(config, 7)->forward(ids, nullptr);
    const at::Tensor b = ModelLoader::builtin(config, 7)->forward(ids, nullptr);
    const at::Tensor c = ModelLoader::builtin(config, 8)->forward(ids, nullptr);
    EXPECT_EQ(a.sizes(), at::IntArrayRef({1, 6, 259}));
    EXPECT_TRUE(a.equal(b));
    EXPECT_GT(maxAbsDifference(a, c), 0.1);
}

TEST(DecoderTest, CachedDecodingEqualsRecomputeForEveryDecoderPreset) {
    // Prefill 5 tokens, then chunks of 3 (multi-token updates past the window), then single tokens.
    for (const std::string& name : std::vector<std::string>{"llama", "mistral", "gemma2", "gemma3", "gemma3n", "llama4", "qwen3-next"}) {
        SCOPED_TRACE(name);
        const ModelConfig config = presetConfig(name);
        auto model = ModelLoader::builtin(config, 3);
        const at::Tensor ids = randomIds(2, 20, 11);
        const at::Tensor reference = model->forward(ids, nullptr);
        for (int64_t chunk : {1, 3}) {
            auto cache = dynamicCache(config);
            EXPECT_LE(maxAbsDifference(cachedLogits(*model, *cache, ids, 5, chunk), reference),
                      name == "qwen3-next" ? kRecurrentTolerance : kTolerance)
                << chunk;
        }
        if (name != "qwen3-next") {
            auto cache = staticCache(config, 24);
            EXPECT_LE(maxAbsDifference(cachedLogits(*model, *cache, ids, 5, 3), reference), kTolerance);
        }
    }
}

TEST(DecoderTest, LinearAttentionStateMakesStepsEqualToRecompute) {
    const ModelConfig config = hybridConfig();
    auto model = ModelLoader::builtin(config, 5);
    const at::Tensor ids = randomIds(1, 12, 2);
    const at::Tensor reference = model->forward(ids, nullptr);
    for (int64_t prefill : {1, 2, 7}) {
        auto cache = dynamicCache(config);
        EXPECT_LE(maxAbsDifference(cachedLogits(*model, *cache, ids, prefill, 1), reference), kTolerance) << prefill;
        // The hybrid layer keeps both kinds of state; the linear one a [batch, channels, kernel] window.
        auto& hybrid = cache->selfAttention().layer(0);
        EXPECT_EQ(hybrid.typeName(), "LinearAttentionAndFullAttentionLayer");
        ASSERT_NE(hybrid.asLinearAttention(), nullptr);
        EXPECT_EQ(hybrid.asLinearAttention()->convStates().size(-1), 3);
        EXPECT_EQ(cache->seqLength(), 12);
    }
}

TEST(DecoderTest, LeftPaddingGivesTheSameLogitsCachedAndRecomputed) {
    for (const std::string& name : std::vector<std::string>{"llama", "mistral", "llama4", "gemma3"}) {
        SCOPED_TRACE(name);
        const ModelConfig config = presetConfig(name);
        auto model = ModelLoader::builtin(config, 4);
        const at::Tensor ids = randomIds(2, 18, 6);
        at::Tensor mask = at::ones({2, 18}, at::kLong);
        mask[0].narrow(0, 0, 5).zero_(); // row 0: five pad tokens on the left
        const at::Tensor reference = model->forward(ids, nullptr, mask);
        // Compare real positions only: what a pad query sees does not matter.
        const at::Tensor real = mask.to(at::kBool).unsqueeze(-1);
        auto dynamic = dynamicCache(config);
        at::Tensor cached = cachedLogits(*model, *dynamic, ids, 7, 1, mask);
        EXPECT_LE(maxAbsDifference(cached.masked_fill(~real, 0), reference.masked_fill(~real, 0)), kTolerance);
        auto fixed = staticCache(config, 18);
        cached = cachedLogits(*model, *fixed, ids, 7, 2, mask);
        EXPECT_LE(maxAbsDifference(cached.masked_fill(~real, 0), reference.masked_fill(~real, 0)), kTolerance);
        // Row 1 has no padding: padding row 0 must not change it.
        const at::Tensor alone = model->forward(ids.narrow(0, 1, 1), nullptr);
        EXPECT_LE(maxAbsDifference(reference.narrow(0, 1, 1), alone), kTolerance);
    }
}

TEST(DecoderTest, SharedLayersHaveNoCacheLayersAndNoKeyValueWeights) {
    const ModelConfig config = presetConfig("gemma3n");
    auto model = ModelLoader::builtin(config);
    EXPECT_TRUE(model->parameters().contains("model.layers.2.self_attn.k_proj.weight"));
    EXPECT_FALSE(model->parameters().contains("model.layers.3.self_attn.k_proj.weight"));
    EXPECT_TRUE(model->parameters().contains("model.layers.3.self_attn.q_proj.weight"));
    auto cache = dynamicCache(config);
    model->forward(randomIds(1, 4, 1), cache.get());
    EXPECT_EQ(cache->selfAttention().size(), 3u);
    EXPECT_EQ(cache->seqLength(), 4);
}

TEST(DecoderTest, RefusesBadInputsWithClearMessages) {
    const ModelConfig config = presetConfig("llama");
    auto model = ModelLoader::builtin(config);
    auto expectRefusal = [](const std::function<void()>& call, const std::string& fragment) {
        try {
            call();
            ADD_FAILURE() << "accepted; expected a refusal mentioning `" << fragment << "`";
        } catch (const kvscope::model::ModelError& error) {
            EXPECT_NE(std::string(error.what()).find(fragment), std::string::npos) << error.what();
        }
    };
    expectRefusal([&] { model->forward(at::tensor({1, 300}, at::kLong).unsqueeze(0), nullptr); }, "300");
    expectRefusal([&] { model->forward(at::zeros({1, 3}), nullptr); }, "integers");
    expectRefusal([&] { model->forward(at::zeros({3}, at::kLong), nullptr); }, "[batch, tokens]");
    expectRefusal([&] { model->forward(at::zeros({1, 3}, at::kLong), nullptr, at::ones({1, 2})); }, "attention mask");
    ModelCache encoderDecoder(std::make_unique<kvscope::cache::EncoderDecoderCache>(
        std::make_unique<kvscope::cache::DynamicCache>(), std::make_unique<kvscope::cache::DynamicCache>()));
    expectRefusal([&] { model->forward(at::zeros({1, 3}, at::kLong), &encoderDecoder); }, "encoder-decoder");
    // A linear-attention model over a cache with no linear-attention layers.
    auto hybrid = ModelLoader::builtin(hybridConfig());
    ModelCache plain(std::make_unique<kvscope::cache::DynamicCache>());
    expectRefusal([&] { hybrid->forward(at::zeros({1, 3}, at::kLong), &plain); }, "no linear-attention state");
    // Parameters that do not match the config.
    kvscope::model::ParameterStore parameters = model->parameters();
    parameters.set("model.norm.weight", at::ones({3}));
    expectRefusal([&] { ModelLoader::fromParameters(config, parameters); }, "model.norm.weight");
}

TEST(DecoderTest, CropAndReorderRefusalsNameTheLayer) {
    const ModelConfig config = presetConfig("mistral"); // window 8
    auto model = ModelLoader::builtin(config);
    auto cache = dynamicCache(config);
    model->forward(randomIds(1, 4, 1), cache.get());
    EXPECT_EQ(cache->cropRefusal(2), "");
    cache->crop(2);
    EXPECT_EQ(cache->seqLength(), 2);
    model->forward(randomIds(1, 9, 1), cache.get());
    EXPECT_NE(cache->cropRefusal(2).find("evicted"), std::string::npos) << cache->cropRefusal(2);
    EXPECT_THROW(cache->crop(2), kvscope::model::ModelError);
    auto fixed = staticCache(config, 16);
    EXPECT_NE(fixed->cropRefusal(1).find("static caches cannot crop"), std::string::npos);
    EXPECT_NE(fixed->batchResizeRefusal().find("batch_repeat_interleave"), std::string::npos);
    EXPECT_EQ(cache->batchResizeRefusal(), "");
}

TEST(DecoderTest, MaskedSlotsHideTheirKeysFromLaterQueriesOfTheirKvHead) {
    const ModelConfig config = presetConfig("llama");
    auto model = ModelLoader::builtin(config, 3);
    const at::Tensor ids = randomIds(1, 12, 5);
    const at::Tensor reference = model->forward(ids, nullptr);
    const int64_t kvHeads = config.numKeyValueHeads;
    auto decode = [&](const at::Tensor& masked) {
        auto cache = dynamicCache(config);
        model->forward(ids.narrow(1, 0, 8), cache.get());
        for (int64_t layer = 0; layer < config.numHiddenLayers; ++layer) {
            cache->setMaskedSlots(layer, masked);
        }
        std::vector<at::Tensor> rows;
        for (int64_t position = 8; position < 12; ++position) {
            rows.push_back(model->forward(ids.narrow(1, position, 1), cache.get()));
        }
        // Later tokens may be cut back, the masked slots may not.
        EXPECT_EQ(cache->cropRefusal(8), "");
        EXPECT_NE(cache->cropRefusal(7).find("masking press"), std::string::npos);
        return at::cat(rows, 1);
    };
    const at::Tensor later = reference.narrow(1, 8, 4);
    // Nothing masked: the logits of full attention.
    EXPECT_LE(maxAbsDifference(decode(at::zeros({1, kvHeads, 8}, at::kBool)), later), kTolerance);
    // Masking slots of one KV head changes what later tokens see.
    at::Tensor masked = at::zeros({1, kvHeads, 8}, at::kBool);
    masked[0][1].narrow(0, 2, 5).fill_(true);
    EXPECT_GT(maxAbsDifference(decode(masked), later), 100 * kTolerance);
}

// A long prompt attends in chunks of query rows: the logits are those of the unchunked pass, for lengths
// around the chunk size, through a cache and without; forwardLast() gives forward()'s last row.
TEST(DecoderTest, AttentionInQueryChunksGivesTheUnchunkedLogits) {
    constexpr int64_t kChunk = 4;
    for (const std::string& preset : {std::string("llama"), std::string("mistral")}) {
        const ModelConfig config = presetConfig(preset);
        auto whole = ModelLoader::builtin(config, 5);
        auto chunked = ModelLoader::builtin(config, 5);
        chunked->setAttentionQueryChunk(kChunk);
        for (int64_t length : {1, 3, 4, 5, 8, 9, 13}) {
            SCOPED_TRACE(preset + ", " + std::to_string(length) + " tokens");
            const at::Tensor ids = randomIds(2, length, static_cast<uint64_t>(length));
            const at::Tensor expected = whole->forward(ids, nullptr);
            EXPECT_LE(maxAbsDifference(chunked->forward(ids, nullptr), expected), 1e-5);
            // Through a cache: a 2-token first chunk, then the rest in one pass of many query rows.
            if (length > 2) {
                auto cache = dynamicCache(config);
                EXPECT_LE(maxAbsDifference(cachedLogits(*chunked, *cache, ids, 2, length - 2), expected),
                          kTolerance);
            }
            const at::Tensor last = chunked->forwardLast(ids, nullptr);
            EXPECT_EQ(last.sizes(), at::IntArrayRef({2, 1, expected.size(2)}));
            EXPECT_LE(maxAbsDifference(last, expected.narrow(1, length - 1, 1)), 1e-5);
        }
    }
}

TEST(DecoderTest, ALongPromptsMlpInSlicesGivesTheUnslicedLogits) {
    // 700 tokens: the MLP takes them 512 at a time. Its first 512 rows against a 512-token prompt's (one slice), and
    // every row against a cache fed 300 then 400 tokens (each pass one slice).
    const ModelConfig config = presetConfig("llama");
    auto model = ModelLoader::builtin(config, 7);
    const at::Tensor ids = randomIds(1, 700, 21);
    const at::Tensor sliced = model->forward(ids, nullptr);
    EXPECT_LE(maxAbsDifference(sliced.narrow(1, 0, 512), model->forward(ids.narrow(1, 0, 512), nullptr)), 1e-5);
    auto cache = dynamicCache(config);
    EXPECT_LE(maxAbsDifference(cachedLogits(*model, *cache, ids, 300, 400), sliced), kTolerance);
}
