// SPDX-License-Identifier: GPL-3.0-or-later
// llama.cpp's cache layer: the Walsh-Hadamard rotation against its matrix written out (Sylvester's signs over
// 1/sqrt(n)) and llama.cpp's block sizes; the layer's blocks against the ggml quantisers (gguf::BlockType, exact
// to gguf-py) applied to each head's row, rotated or not; what attention reads; the byte count; a press's
// per-head eviction and ThinK's rewrite keeping blocks and values together; and the refusals.
#include "kvscope/cache/LlamaCppLayer.h"

#include "CacheTestHelpers.h"
#include "kvscope/cache/CacheError.h"
#include "kvscope/cache/LlamaCppCache.h"
#include "kvscope/cache/WalshHadamardRotation.h"
#include "kvscope/gguf/BlockType.h"

#include <ATen/ATen.h>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <gtest/gtest.h>
#include <vector>

namespace kvscope::cache {
namespace {

using gguf::BlockType;

const BlockType& type(const char* name) { return *BlockType::find(name); }

/// The blocks of `rows` (contiguous floats, whole blocks) quantised by `name`'s ggml quantiser.
std::vector<uint8_t> quantised(std::vector<float> rows, const char* name, int64_t rotation) {
    if (rotation > 0) {
        WalshHadamardRotation::apply(rows.data(), static_cast<int64_t>(rows.size()) / rotation, rotation);
    }
    const BlockType& t = type(name);
    std::vector<uint8_t> bytes(rows.size() / t.blockSize() * t.typeSize());
    t.quantize(rows.data(), rows.size() / t.blockSize(), bytes.data());
    return bytes;
}

std::vector<float> floats(const at::Tensor& tensor) {
    const at::Tensor contiguous = tensor.to(at::kFloat).contiguous();
    return {contiguous.data_ptr<float>(), contiguous.data_ptr<float>() + contiguous.numel()};
}

} // namespace

TEST(LlamaCppLayerTest, RotationIsTheOrthonormalWalshHadamardMatrix) {
    constexpr int64_t n = 64;
    for (int64_t column = 0; column < n; ++column) {
        std::vector<float> unit(n, 0.0f);
        unit[column] = 1.0f;
        WalshHadamardRotation::apply(unit.data(), 1, n);
        for (int64_t row = 0; row < n; ++row) {
            // Sylvester: H[i][j] = (-1)^popcount(i & j) / sqrt(n).
            const float expected = (std::popcount(static_cast<uint64_t>(row & column)) % 2 ? -1.0f : 1.0f) / 8.0f;
            ASSERT_EQ(unit[row], expected) << row << ", " << column;
        }
    }
    // Its own inverse.
    at::manual_seed(1);
    const std::vector<float> original = floats(at::randn({3 * n}));
    std::vector<float> twice = original;
    WalshHadamardRotation::apply(twice.data(), 3, n);
    WalshHadamardRotation::apply(twice.data(), 3, n);
    for (size_t i = 0; i < original.size(); ++i) {
        EXPECT_NEAR(twice[i], original[i], 1e-6);
    }
    // llama.cpp's blocks: K the largest power of two from 64 dividing the head, V 64; none below 64.
    const std::vector<std::array<int64_t, 3>> table = {
        {32, 0, 0}, {48, 0, 0}, {64, 64, 64}, {96, 0, 0}, {128, 128, 64}, {192, 64, 64}, {256, 256, 64}};
    for (const auto& [head, key, value] : table) {
        EXPECT_EQ(WalshHadamardRotation::keyBlock(head), key) << head;
        EXPECT_EQ(WalshHadamardRotation::valueBlock(head), value) << head;
    }
}

TEST(LlamaCppLayerTest, StoresEachHeadsRowAsGgmlQuantisesIt) {
    at::manual_seed(2);
    // [batch 1, 2 KV heads, 3 tokens, head_dim 64]; a second update of 2 tokens.
    const at::Tensor keys = at::randn({1, 2, 3, 64});
    const at::Tensor values = at::randn({1, 2, 3, 64});
    const at::Tensor moreKeys = at::randn({1, 2, 2, 64});
    const at::Tensor moreValues = at::randn({1, 2, 2, 64});
    for (const bool rotation : {false, true}) {
        SCOPED_TRACE(rotation ? "rotated" : "not rotated");
        LlamaCppLayer layer(type("q4_0"), type("q8_0"), rotation);
        layer.update(keys, values);
        const KeyValueStates out = layer.update(moreKeys, moreValues);
        EXPECT_EQ(layer.keyRotation(), rotation ? 64 : 0);
        EXPECT_EQ(layer.valueRotation(), rotation ? 64 : 0);
        const at::Tensor allKeys = at::cat({keys, moreKeys}, 2);
        const at::Tensor allValues = at::cat({values, moreValues}, 2);
        // llama.cpp's row of token t: head 0's 64 values, then head 1's, each quantised in blocks of 32.
        const std::vector<float> keyRows = floats(allKeys[0].transpose(0, 1));
        const std::vector<float> valueRows = floats(allValues[0].transpose(0, 1));
        EXPECT_EQ(layer.keyRows(), quantised(keyRows, "q4_0", rotation ? 64 : 0));
        EXPECT_EQ(layer.valueRows(), quantised(valueRows, "q8_0", rotation ? 64 : 0));
        // 5 tokens x 2 heads x 2 blocks: q4_0 18 bytes a block, q8_0 34.
        EXPECT_EQ(layer.storedBytes(), 5 * 2 * 2 * (18 + 34));
        EXPECT_EQ(layer.quantizedBytes(), layer.storedBytes());
        // Attention reads the blocks dequantised and rotated back: near the states, at q4_0's and q8_0's error.
        EXPECT_EQ(out.keys.sizes(), allKeys.sizes());
        EXPECT_LT(test::maxError(out.keys, allKeys), 0.6);
        EXPECT_GT(test::maxError(out.keys, allKeys), 0.0);
        EXPECT_LT(test::maxError(out.values, allValues), 0.05);
        std::vector<float> decoded(keyRows.size());
        type("q4_0").dequantize(layer.keyRows().data(), keyRows.size() / 32, decoded.data());
        if (rotation) {
            WalshHadamardRotation::apply(decoded.data(), static_cast<int64_t>(decoded.size()) / 64, 64);
        }
        EXPECT_EQ(floats(out.keys[0].transpose(0, 1)), decoded);
        // The update reports its quantisation as a flush of its own 2 tokens (CacheTracer's QuantizeFlush).
        const QuantizationReport& report = layer.lastUpdate();
        EXPECT_EQ(report.tokensMoved, 2);
        EXPECT_EQ(report.quantizedTokensAfter, 5);
        const at::Tensor newKeys = out.keys.narrow(2, 3, 2).to(at::kDouble) - moreKeys.to(at::kDouble);
        const at::Tensor newValues = out.values.narrow(2, 3, 2).to(at::kDouble) - moreValues.to(at::kDouble);
        EXPECT_DOUBLE_EQ(report.maxAbsError,
                         std::max(newKeys.abs().max().item<double>(), newValues.abs().max().item<double>()));
        const double given = std::sqrt(moreKeys.to(at::kDouble).pow(2).sum().item<double>() +
                                       moreValues.to(at::kDouble).pow(2).sum().item<double>());
        EXPECT_NEAR(report.relativeError,
                    std::sqrt(newKeys.pow(2).sum().item<double>() + newValues.pow(2).sum().item<double>()) / given,
                    1e-12);
    }
}

TEST(LlamaCppLayerTest, RotationSpreadsAnOutlierChannel) {
    // Keys whose channel 5 is 40x the rest (real models' outlier key channels): q4_0's block scale is set by
    // the outlier, so the other channels round to almost nothing; rotated, the outlier is spread over the block.
    at::manual_seed(3);
    at::Tensor keys = at::randn({1, 1, 16, 64});
    keys.select(3, 5).mul_(40.0);
    double errors[2];
    for (const bool rotation : {false, true}) {
        LlamaCppLayer layer(type("q4_0"), type("f16"), rotation);
        const KeyValueStates out = layer.update(keys, keys);
        const at::Tensor rest = at::cat({out.keys.narrow(3, 0, 5), out.keys.narrow(3, 6, 58)}, 3);
        const at::Tensor restExpected = at::cat({keys.narrow(3, 0, 5), keys.narrow(3, 6, 58)}, 3);
        errors[rotation] = (rest - restExpected).pow(2).mean().item<double>();
        EXPECT_EQ(layer.valueRotation(), 0); // f16 values are not rotated
        EXPECT_EQ(layer.quantizedBytes(), 16 * 2 * 18);
        EXPECT_EQ(layer.storedBytes(), 16 * 2 * 18 + 16 * 64 * 2);
    }
    EXPECT_LT(errors[1], errors[0] / 2) << "rotated " << errors[1] << ", not rotated " << errors[0];
}

TEST(LlamaCppLayerTest, ChannelErrorIsEachChannelsErrorOverEveryQuantisedToken) {
    // Head 1's key channel 5 is 40x the rest, as real models' outlier key channels are.
    at::manual_seed(5);
    at::Tensor keys = at::randn({2, 3, 10, 64});
    keys.select(1, 1).select(2, 5).mul_(40.0);
    const at::Tensor values = at::randn({2, 3, 10, 32});
    double blockRatio[2];
    for (const bool rotation : {false, true}) {
        LlamaCppLayer layer(type("q4_0"), type("q8_0"), rotation);
        layer.update(keys.narrow(2, 0, 7), values.narrow(2, 0, 7));
        const KeyValueStates out = layer.update(keys.narrow(2, 7, 3), values.narrow(2, 7, 3));
        // The independent figure: over batch rows and tokens, per head and channel, from what attention reads.
        const auto rms = [](const at::Tensor& t) { return floats(t.pow(2).mean(at::IntArrayRef{0, 2}).sqrt().reshape(-1)); };
        const auto expectNear = [](const std::vector<float>& got, const std::vector<float>& expected) {
            ASSERT_EQ(got.size(), expected.size());
            for (size_t i = 0; i < got.size(); ++i) {
                EXPECT_NEAR(got[i], expected[i], 1e-5 * (1.0 + expected[i])) << "channel " << i;
            }
        };
        const ChannelError& keyChannels = layer.keyChannelError();
        EXPECT_EQ(keyChannels.heads(), 3);
        EXPECT_EQ(keyChannels.dim(), 64);
        EXPECT_EQ(keyChannels.tokens(), 2 * 10);
        expectNear(keyChannels.rmsError(), rms(out.keys - keys));
        expectNear(keyChannels.rmsValue(), rms(keys));
        expectNear(layer.valueChannelError().rmsError(), rms(out.values - values));
        EXPECT_EQ(layer.valueChannelError().dim(), 32);
        // Head 1: unrotated, the outlier's block (channels 0-31) errs far more than the next block; rotated, the
        // error is spread over the head.
        const at::Tensor error = (out.keys - keys).select(1, 1).pow(2);
        blockRatio[rotation] = (error.narrow(2, 0, 32).mean() / error.narrow(2, 32, 32).mean()).item<double>();
        // A rewrite of the stored keys is not counted again; a reset starts over.
        layer.rewriteKeys(out.keys);
        EXPECT_EQ(layer.keyChannelError().tokens(), 20);
        layer.reset();
        EXPECT_EQ(layer.keyChannelError().tokens(), 0);
        EXPECT_TRUE(layer.keyChannelError().rmsError().empty());
    }
    EXPECT_GT(blockRatio[0], 10.0);
    EXPECT_LT(blockRatio[1], 2.0);
    EXPECT_GT(blockRatio[1], 0.5);
}

TEST(LlamaCppLayerTest, FloatTypesKeepTheStatesAsGgmlRoundsThem) {
    at::manual_seed(4);
    const at::Tensor keys = at::randn({2, 3, 4, 32});
    LlamaCppLayer layer(type("f32"), type("f16"), true);
    const KeyValueStates out = layer.update(keys, keys);
    EXPECT_TRUE(at::equal(out.keys, keys));
    EXPECT_TRUE(at::equal(out.values, keys.to(at::kHalf).to(at::kFloat)));
    EXPECT_EQ(layer.keyRotation(), 0);
    EXPECT_EQ(layer.storedBytes(), 2 * 3 * 4 * 32 * (4 + 2));
    EXPECT_EQ(layer.quantizedBytes(), 0);
    // Batch row 1's K rows: its tokens' three heads side by side, as f32 bytes.
    const std::vector<uint8_t> rows = layer.keyRows(1);
    const std::vector<float> expected = floats(keys[1].transpose(0, 1));
    ASSERT_EQ(rows.size(), expected.size() * 4);
    EXPECT_EQ(std::memcmp(rows.data(), expected.data(), rows.size()), 0);
}

TEST(LlamaCppLayerTest, PressesAndCropsKeepBlocksWithTheirValues) {
    at::manual_seed(5);
    const at::Tensor keys = at::randn({1, 2, 6, 64});
    LlamaCppLayer layer(type("q5_1"), type("q4_1"), true);
    layer.update(keys, -keys);
    const std::vector<uint8_t> before = layer.keyRows();
    const int64_t row = 2 * 2 * 24; // 2 heads x 2 blocks of q5_1 (24 bytes)
    const at::Tensor decodedBefore = layer.keys().clone();
    // Per head: head 0 keeps tokens 1 and 4, head 1 tokens 0 and 5.
    layer.keepTokens(at::tensor({1, 4, 0, 5}, at::kLong).reshape({1, 2, 2}));
    ASSERT_EQ(layer.storedTokens(), 2);
    const std::vector<uint8_t> after = layer.keyRows();
    ASSERT_EQ(after.size(), static_cast<size_t>(2 * row));
    const int64_t head = row / 2;
    const std::vector<std::array<int64_t, 3>> kept = {{0, 0, 1}, {0, 1, 0}, {1, 0, 4}, {1, 1, 5}}; // slot, head, token
    for (const auto& [slot, h, token] : kept) {
        EXPECT_EQ(std::memcmp(after.data() + slot * row + h * head, before.data() + token * row + h * head, head), 0)
            << "slot " << slot << " head " << h;
        EXPECT_TRUE(at::equal(layer.keys()[0][h][slot], decodedBefore[0][h][token]));
    }
    EXPECT_EQ(layer.storedBytes(), 2 * 2 * 2 * (24 + 20));
    layer.crop(1);
    EXPECT_EQ(layer.keyRows().size(), static_cast<size_t>(row));
    EXPECT_EQ(layer.storedBytes(), 2 * 2 * (24 + 20));
    // ThinK zeroes channels: the rewritten keys are quantised again.
    const at::Tensor zeroed = at::zeros_like(layer.keys());
    layer.rewriteKeys(zeroed);
    EXPECT_TRUE(at::equal(layer.keys(), zeroed));
    EXPECT_EQ(layer.keyRows(), quantised(std::vector<float>(128, 0.0f), "q5_1", 64));
}

TEST(LlamaCppLayerTest, RefusesWhatLlamaCppRefuses) {
    EXPECT_TRUE(test::refuses([] { LlamaCppLayer(type("q4_0"), type("f16"), true).update(at::zeros({1, 1, 1, 48}),
                                                                                         at::zeros({1, 1, 1, 48})); },
                              ErrorKind::Value, {"do not divide the head dimension 48"}));
    EXPECT_TRUE(test::refuses([] { LlamaCppCache::cacheType("q3_k", "K"); }, ErrorKind::Value,
                              {"allowed: f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1"}));
    EXPECT_EQ(LlamaCppCache::cacheType("iq4_nl", "V").typeSize(), 18u);
}

} // namespace kvscope::cache
