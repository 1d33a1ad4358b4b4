// SPDX-License-Identifier: GPL-3.0-or-later
// The Whisper-like encoder-decoder: decoder self-attention through the self-attention cache,
// cross-attention keys/values computed once into the cross-attention cache.
#include "kvscope/cache/AttentionLayer.h"
#include "kvscope/cache/DynamicCache.h"
#include "kvscope/cache/EncoderDecoderCache.h"
#include "kvscope/cache/StaticCache.h"
#include "kvscope/model/EncoderDecoderModel.h"
#include "kvscope/model/ModelCache.h"
#include "kvscope/model/ModelError.h"
#include "kvscope/model/ModelLoader.h"

#include "ModelTestHelpers.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

using kvscope::model::EncoderDecoderModel;
using kvscope::model::ModelCache;
using kvscope::model::ModelLoader;
using kvscope::testing::maxAbsDifference;

namespace {

std::unique_ptr<ModelCache> encoderDecoderCache() {
    return std::make_unique<ModelCache>(std::make_unique<kvscope::cache::EncoderDecoderCache>(
        std::make_unique<kvscope::cache::DynamicCache>(), std::make_unique<kvscope::cache::DynamicCache>()));
}

} // namespace

TEST(EncoderDecoderModelTest, CrossAttentionStatesAreComputedOnceAndMarkedUpdated) {
    const auto config = kvscope::testing::presetConfig("whisper");
    auto model = ModelLoader::builtin(config, 2);
    auto* whisper = dynamic_cast<EncoderDecoderModel*>(model.get());
    ASSERT_NE(whisper, nullptr);
    EXPECT_EQ(whisper->encoderOutput().sizes(), at::IntArrayRef({1, 16, 64}));

    auto cache = encoderDecoderCache();
    auto& pair = *cache->encoderDecoder();
    EXPECT_FALSE(pair.isUpdated(0));
    model->forward(at::tensor({256, 72, 105}, at::kLong).unsqueeze(0), cache.get());
    EXPECT_TRUE(pair.isUpdated(0));
    EXPECT_TRUE(pair.isUpdated(1));
    EXPECT_EQ(pair.crossAttentionCache().seqLength(0), 16);
    const at::Tensor keysBefore = pair.crossAttentionCache().layer(1).asAttention()->keys().clone();
    model->forward(at::tensor({33}, at::kLong).unsqueeze(0), cache.get());
    // The decoder grew by one token; the cross-attention cache did not change.
    EXPECT_EQ(cache->seqLength(), 4);
    EXPECT_EQ(pair.crossAttentionCache().seqLength(0), 16);
    EXPECT_TRUE(pair.crossAttentionCache().layer(1).asAttention()->keys().equal(keysBefore));
}

TEST(EncoderDecoderModelTest, CachedDecodingEqualsRecompute) {
    const auto config = kvscope::testing::presetConfig("whisper");
    auto model = ModelLoader::builtin(config, 3);
    auto generator = at::make_generator<at::CPUGeneratorImpl>(4);
    const at::Tensor ids = at::randint(0, 259, {2, 14}, generator, at::kLong);
    const at::Tensor reference = model->forward(ids, nullptr);
    auto dynamic = encoderDecoderCache();
    EXPECT_LE(maxAbsDifference(kvscope::testing::cachedLogits(*model, *dynamic, ids, 4), reference), 1e-4);

    auto crossConfig = config;
    crossConfig.layerTypes = std::vector<std::string>(2, "full_attention");
    ModelCache fixed(std::make_unique<kvscope::cache::EncoderDecoderCache>(
        std::make_unique<kvscope::cache::StaticCache>(config, 20), std::make_unique<kvscope::cache::StaticCache>(crossConfig, 16)));
    EXPECT_LE(maxAbsDifference(kvscope::testing::cachedLogits(*model, fixed, ids, 4, 3), reference), 1e-4);
}

TEST(EncoderDecoderModelTest, RefusesDecoderCachesAndPositionsPastTheTable) {
    const auto config = kvscope::testing::presetConfig("whisper");
    auto model = ModelLoader::builtin(config);
    ModelCache decoderOnly(std::make_unique<kvscope::cache::DynamicCache>());
    try {
        model->forward(at::zeros({1, 2}, at::kLong), &decoderOnly);
        FAIL() << "a decoder-only cache was accepted";
    } catch (const kvscope::model::ModelError& error) {
        EXPECT_NE(std::string(error.what()).find("encoder-decoder cache"), std::string::npos) << error.what();
    }
    try {
        model->forward(at::zeros({1, 449}, at::kLong), nullptr);
        FAIL() << "position 449 was accepted";
    } catch (const kvscope::model::ModelError& error) {
        EXPECT_NE(std::string(error.what()).find("max_target_positions"), std::string::npos) << error.what();
    }
}
