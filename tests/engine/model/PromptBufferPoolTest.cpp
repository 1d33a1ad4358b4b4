// SPDX-License-Identifier: GPL-3.0-or-later
// The prompt's buffer pool as LibTorch's CPU allocator: a prompt's large buffers come from its region and their
// space is handed on (the same address for the same size, freed neighbours joined for a larger one); small buffers
// and those outside a prompt do not; when the last prompt ends the free pages go back and kept buffers keep their
// values; a decoder's prompt of 8 layers needs no more of the region than one of 2 (each layer reuses the last
// one's buffers) and leaves none of it in use, and with a cache no more than the rows the cache keeps.
#include "PromptBufferPool.h"

#include "kvscope/cache/DynamicCache.h"
#include "kvscope/config/AddressSanitizer.h"
#include "kvscope/model/Decoder.h"
#include "kvscope/model/ModelCache.h"
#include "kvscope/model/ModelLoader.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using kvscope::config::ModelConfig;
using kvscope::model::ModelCache;
using kvscope::model::ModelLoader;
using kvscope::model::PromptBufferPool;

namespace {

constexpr int64_t kMegabyteFloats = 256 * 1024;

PromptBufferPool& pool() { return PromptBufferPool::shared(); }

at::Tensor floats(int64_t count) { return at::empty({count}, at::kFloat); }

ModelConfig llamaOfLayers(int layers) {
    nlohmann::json config = nlohmann::json::parse(R"({
        "model_type": "llama", "hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 64, "vocab_size": 259})");
    config["num_hidden_layers"] = layers;
    return ModelConfig::fromJson(config);
}

class PromptBufferPoolTest : public ::testing::Test {
protected:
    void SetUp() override {
#ifdef KVSCOPE_ASAN
        GTEST_SKIP() << "built with AddressSanitizer: the pool stands aside so that it checks every buffer";
#endif
        ASSERT_TRUE(pool().hasRegion()) << "the region's address space could not be reserved";
    }
};

} // namespace

// First: its prompt reaches further into the region than the other tests' buffers do.
TEST_F(PromptBufferPoolTest, ADecodersLayersReuseOneLayersBuffers) {
    const at::Tensor ids = at::arange(512, at::kLong).remainder(259).unsqueeze(0);
    const std::size_t usedBefore = pool().usedBytes();
    const std::size_t extentBefore = pool().extentBytes();
    at::Tensor twoLayers = ModelLoader::builtin(llamaOfLayers(2), 7)->forward(ids, nullptr);
    const std::size_t extentOfTwo = pool().extentBytes();
    EXPECT_GT(extentOfTwo, extentBefore) << "a 512-token prompt's buffers (512 KB of hidden states) came from glibc";
    // The logits (530 KB) were the prompt's last buffer, and are still held.
    EXPECT_EQ(pool().usedBytes(), usedBefore + 512 * 259 * sizeof(float) / 4096 * 4096 + 4096);
    twoLayers.reset();
    const at::Tensor eightLayers = ModelLoader::builtin(llamaOfLayers(8), 7)->forward(ids, nullptr);
    EXPECT_EQ(pool().extentBytes(), extentOfTwo);
    EXPECT_EQ(pool().residentFreeBytes(), 0u);
    EXPECT_TRUE(at::isfinite(eightLayers).all().item<bool>());
}

TEST_F(PromptBufferPoolTest, ACachesRowsTakeNoMoreOfTheRegionThanTheyHold) {
    // Each layer keeps its keys and values (2 KV heads x 576 rows of 64: the prompt and room for what follows,
    // 288 KB each) between the next layers' buffers: 8 layers reach further than 2 by no more than 6 layers' rows
    // and the holes of one.
    const at::Tensor ids = at::arange(512, at::kLong).remainder(259).unsqueeze(0);
    const std::size_t layerRows = 2 * (2 * 576 * 64 * sizeof(float));
    std::size_t extents[2] = {};
    for (int i = 0; i < 2; ++i) {
        const ModelConfig config = llamaOfLayers(i == 0 ? 2 : 8);
        ModelCache cache(std::make_unique<kvscope::cache::DynamicCache>(config));
        const std::size_t used = pool().usedBytes();
        ModelLoader::builtin(config, 7)->forwardLast(ids, &cache);
        EXPECT_EQ(pool().usedBytes(), used + (i == 0 ? 2 : 8) * layerRows);
        extents[i] = pool().extentBytes();
    }
    EXPECT_LE(extents[1], extents[0] + 7 * layerRows);
}

TEST_F(PromptBufferPoolTest, APromptsLargeBufferComesFromTheRegionAndItsSpaceIsHandedOn) {
    PromptBufferPool::Prompt prompt;
    const std::size_t usedBefore = pool().usedBytes();
    at::Tensor first = floats(kMegabyteFloats);
    EXPECT_EQ(pool().usedBytes(), usedBefore + (1u << 20));
    void* address = first.data_ptr();
    first.reset();
    EXPECT_EQ(pool().usedBytes(), usedBefore);
    const std::size_t extent = pool().extentBytes();
    const at::Tensor second = floats(kMegabyteFloats);
    EXPECT_EQ(second.data_ptr(), address);
    EXPECT_EQ(pool().extentBytes(), extent);
}

TEST_F(PromptBufferPoolTest, FreedNeighboursJoinForALargerBuffer) {
    PromptBufferPool::Prompt prompt;
    // Three of 512 KB side by side, the first two freed: one of 1 MB takes their place.
    at::Tensor a = floats(kMegabyteFloats / 2);
    at::Tensor b = floats(kMegabyteFloats / 2);
    const at::Tensor c = floats(kMegabyteFloats / 2);
    ASSERT_EQ(static_cast<char*>(b.data_ptr()), static_cast<char*>(a.data_ptr()) + (1 << 19));
    void* address = a.data_ptr();
    a.reset();
    b.reset();
    const std::size_t extent = pool().extentBytes();
    const at::Tensor joined = floats(kMegabyteFloats);
    EXPECT_EQ(joined.data_ptr(), address);
    EXPECT_EQ(pool().extentBytes(), extent);
}

TEST_F(PromptBufferPoolTest, SmallBuffersAndBuffersOutsideAPromptComeFromGlibc) {
    const std::size_t used = pool().usedBytes();
    const at::Tensor outside = floats(kMegabyteFloats);
    EXPECT_EQ(pool().usedBytes(), used);
    PromptBufferPool::Prompt prompt;
    const at::Tensor small = floats(PromptBufferPool::kPooledBytes / sizeof(float) - 1);
    EXPECT_EQ(pool().usedBytes(), used);
    const at::Tensor large = floats(PromptBufferPool::kPooledBytes / sizeof(float));
    EXPECT_EQ(pool().usedBytes(), used + PromptBufferPool::kPooledBytes);
}

TEST_F(PromptBufferPoolTest, WhenTheLastPromptEndsFreePagesGoBackAndKeptBuffersKeepTheirValues) {
    at::Tensor kept;
    {
        PromptBufferPool::Prompt outer;
        {
            PromptBufferPool::Prompt inner;
            kept = at::arange(kMegabyteFloats, at::kFloat);
            at::Tensor spent = floats(2 * kMegabyteFloats);
            spent.fill_(1.0f);
        }
        // The outer prompt still runs: the spent buffer's pages stay for its next buffers.
        EXPECT_GE(pool().residentFreeBytes(), 2u << 20);
    }
    EXPECT_EQ(pool().residentFreeBytes(), 0u);
    EXPECT_TRUE(kept.equal(at::arange(kMegabyteFloats, at::kFloat)));
    const std::size_t used = pool().usedBytes();
    kept.reset();
    EXPECT_EQ(pool().usedBytes(), used - (1u << 20));
    EXPECT_EQ(pool().residentFreeBytes(), 0u);
}
