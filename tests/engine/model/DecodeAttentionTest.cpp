// SPDX-License-Identifier: GPL-3.0-or-later
// A decode step's attention kernels against LibTorch's products: the scores and the weighted values of each KV
// head's grouped query rows, over caches held as a wider buffer's first rows (as SequenceBuffer hands them out),
// for row counts on both sides of the kernels' four-row groups and key counts past one scoring task's 256; then
// ops::attend with and without them (processors without AVX2 take LibTorch's path) gives the same outputs. The
// fused step (runs of keys combined by their maxima) against eager attention in double, at the real models'
// shapes, with masks (a sliding window, holes, per batch row) and a row that sees no key.
#include "DecodeAttention.h"

#include "kvscope/gguf/BlockType.h"
#include "kvscope/model/TensorOps.h"

#include "ModelTestHelpers.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

using kvscope::gguf::BlockType;
using kvscope::gguf::KernelLevel;
using kvscope::model::ops::DecodeAttention;
using kvscope::testing::maxAbsDifference;

namespace {

at::Tensor seededNormal(at::IntArrayRef shape, uint64_t seed) {
    auto generator = at::make_generator<at::CPUGeneratorImpl>(seed);
    return at::randn(shape, generator, at::TensorOptions().dtype(at::kFloat));
}

/// [B, H, length, D] held as the first rows of a buffer of `length + 37` rows: strided, as a cache's view.
at::Tensor cacheView(int64_t batch, int64_t heads, int64_t length, int64_t dim, uint64_t seed) {
    return seededNormal({batch, heads, length + 37, dim}, seed).narrow(2, 0, length);
}

bool avx2Kernels() { return BlockType::supportedKernelLevel() != KernelLevel::Portable; }

/// Eager attention, [B, T, Hq * D]: each query head against its KV head's keys, scores * scale, masked with the
/// dtype's lowest value, softmax, times the values.
at::Tensor eagerAttention(const at::Tensor& query, const at::Tensor& keys, const at::Tensor& values, const at::Tensor& mask,
                 double scale) {
    const int64_t groups = query.size(1) / keys.size(1);
    at::Tensor scores = at::matmul(query, keys.repeat_interleave(groups, 1).transpose(-1, -2)) * scale;
    if (mask.defined()) {
        scores = scores.masked_fill(mask.logical_not(), std::numeric_limits<float>::lowest());
    }
    const at::Tensor output = at::matmul(at::softmax(scores, -1), values.repeat_interleave(groups, 1));
    return output.transpose(1, 2).reshape({query.size(0), query.size(2), -1});
}

} // namespace

TEST(DecodeAttentionTest, ScoresAndOutputsEqualLibTorchsProducts) {
    if (!avx2Kernels()) {
        GTEST_SKIP() << "this processor has no AVX2: attention keeps LibTorch's products";
    }
    struct Case {
        int64_t batch;
        int64_t kvHeads;
        int64_t rows;
        int64_t length;
        int64_t dim;
    };
    const std::vector<Case> cases = {{1, 3, 3, 2048, 64}, {1, 1, 4, 600, 256}, {2, 2, 5, 257, 32},
                                     {1, 1, 1, 1, 16},    {1, 2, 16, 300, 64}, {2, 1, 7, 33, 48}};
    uint64_t seed = 40;
    for (const Case& c : cases) {
        SCOPED_TRACE("rows " + std::to_string(c.rows) + ", length " + std::to_string(c.length) + ", dim " +
                     std::to_string(c.dim));
        const at::Tensor query = seededNormal({c.batch, c.kvHeads, c.rows, c.dim}, seed++);
        const at::Tensor keys = cacheView(c.batch, c.kvHeads, c.length, c.dim, seed++);
        const at::Tensor values = cacheView(c.batch, c.kvHeads, c.length, c.dim, seed++);
        ASSERT_TRUE(DecodeAttention::applies(query, keys));
        const at::Tensor scores = DecodeAttention::scores(query, keys);
        EXPECT_LE(maxAbsDifference(scores, at::matmul(query, keys.transpose(-1, -2))), 1e-4);
        const at::Tensor weights = at::softmax(scores, -1);
        EXPECT_LE(maxAbsDifference(DecodeAttention::output(weights, values), at::matmul(weights, values)), 1e-5);
    }
}

TEST(DecodeAttentionTest, AppliesOnlyToFewRowsOfCpuFloatStatesWithWholeSlices) {
    if (!avx2Kernels()) {
        GTEST_SKIP() << "this processor has no AVX2: the kernels never apply";
    }
    const at::Tensor keys = cacheView(1, 2, 40, 64, 1);
    EXPECT_TRUE(DecodeAttention::applies(seededNormal({1, 2, 16, 64}, 2), keys));
    EXPECT_FALSE(DecodeAttention::applies(seededNormal({1, 2, 17, 64}, 2), keys));  // a prefill's rows
    EXPECT_FALSE(DecodeAttention::applies(seededNormal({1, 2, 4, 64}, 2), keys.to(at::kDouble)));
    EXPECT_FALSE(DecodeAttention::applies(seededNormal({1, 2, 4, 24}, 2), cacheView(1, 2, 40, 24, 3)));
    EXPECT_FALSE(DecodeAttention::applies(seededNormal({1, 2, 4, 64}, 2), 
                                                 seededNormal({1, 2, 64, 40}, 4).transpose(2, 3)));  // columns strided
    const KernelLevel before = BlockType::kernelLevel();
    BlockType::useKernelLevel(KernelLevel::Portable);
    EXPECT_FALSE(DecodeAttention::applies(seededNormal({1, 2, 4, 64}, 2), keys));
    BlockType::useKernelLevel(before);
}

TEST(DecodeAttentionTest, AttendGivesTheSameStepWithAndWithoutTheKernels) {
    // A decode step (one row) and a short speculative one (three rows) of 8 query heads over 2 KV heads, with a
    // sliding window's mask, a softcap and a masking press's hidden slots.
    uint64_t seed = 90;
    for (const int64_t rows : {1, 3}) {
        const int64_t past = 700;
        const int64_t kv = past + rows;
        const at::Tensor query = seededNormal({1, 8, rows, 64}, seed++);
        const at::Tensor keys = cacheView(1, 2, kv, 64, seed++);
        const at::Tensor values = cacheView(1, 2, kv, 64, seed++);
        const at::Tensor window = at::ones({rows, kv}, at::kBool).tril(past).triu(past - 511).view({1, 1, rows, kv});
        at::Tensor hidden = at::zeros({1, 2, 5}, at::kBool);
        hidden.select(1, 1).select(1, 3).fill_(true);
        const KernelLevel before = BlockType::kernelLevel();
        BlockType::useKernelLevel(KernelLevel::Portable);
        const at::Tensor libtorch = kvscope::model::ops::attend(query, keys, values, window, 0.125, 30.0, nullptr, hidden);
        BlockType::useKernelLevel(before);
        const at::Tensor kernels = kvscope::model::ops::attend(query, keys, values, window, 0.125, 30.0, nullptr, hidden);
        EXPECT_LE(maxAbsDifference(kernels, libtorch), 1e-5) << rows << " rows";
    }
}

TEST(DecodeAttentionTest, TheFusedStepEqualsEagerAttention) {
    if (!avx2Kernels()) {
        GTEST_SKIP() << "this processor has no AVX2: attention keeps LibTorch's products";
    }
    struct Case {
        const char* name;
        int64_t batch, heads, kvHeads, tokens, length, dim;
        int64_t window;  ///< > 0: the last token sees only the last `window` keys
        bool holes;      ///< every third key hidden from batch row 1 (a mask per batch row)
        bool masked;
    };
    const std::vector<Case> cases = {
        {"SmolLM2's heads after 560 tokens, no mask", 1, 9, 3, 1, 560, 64, 0, false, false},
        {"Gemma 3's heads, a sliding window of 512 in 700 slots", 1, 4, 1, 1, 700, 256, 512, false, true},
        {"two batch rows with holes, three tokens", 2, 4, 2, 3, 300, 32, 0, true, true},
        {"one key", 1, 2, 1, 1, 1, 16, 0, false, false},
        {"2048 keys, one query head per KV head", 1, 8, 8, 1, 2048, 64, 0, false, true},
        {"37 keys of 48 values", 1, 6, 2, 1, 37, 48, 0, false, true},
    };
    uint64_t seed = 300;
    for (const Case& c : cases) {
        SCOPED_TRACE(c.name);
        // The projection's view [B, T, Hq, D] -> [B, Hq, T, D], and the cache's rows of a larger buffer.
        const at::Tensor query = seededNormal({c.batch, c.tokens, c.heads, c.dim}, seed++).transpose(1, 2) * 2.0;
        const at::Tensor keys = cacheView(c.batch, c.kvHeads, c.length, c.dim, seed++);
        const at::Tensor values = cacheView(c.batch, c.kvHeads, c.length, c.dim, seed++);
        at::Tensor mask;
        if (c.masked) {
            const int64_t past = c.length - c.tokens;
            const at::Tensor q = at::arange(c.tokens, at::kLong).view({c.tokens, 1}) + past;
            const at::Tensor k = at::arange(c.length, at::kLong).view({1, c.length});
            mask = (k <= q).logical_and(c.window > 0 ? k > q - c.window : at::ones_like(k, at::kBool));
            mask = mask.view({1, 1, c.tokens, c.length}).expand({c.batch, 1, c.tokens, c.length}).clone();
            if (c.holes) {
                mask[1].logical_and_((at::arange(c.length, at::kLong) % 3 != 1).view({1, 1, c.length}));
            }
        }
        ASSERT_TRUE(DecodeAttention::fuses(query, keys, values, mask));
        const at::Tensor fused = DecodeAttention::attend(query, keys, values, mask, 0.2);
        ASSERT_TRUE(fused.defined());
        EXPECT_EQ(fused.sizes(), at::IntArrayRef({c.batch, c.tokens, c.heads * c.dim}));
        // As near the exact (double) result as eager attention in float is: within twice its rounding.
        const at::Tensor exact = eagerAttention(query.to(at::kDouble), keys.to(at::kDouble), values.to(at::kDouble), mask, 0.2);
        const double rounding = maxAbsDifference(eagerAttention(query, keys, values, mask, 0.2).to(at::kDouble), exact);
        EXPECT_LE(maxAbsDifference(fused.to(at::kDouble), exact), std::max(2.0 * rounding, 1e-6));
        if (c.tokens == 1) {
            // ops::attend takes it for a decode step's row.
            EXPECT_TRUE(at::equal(kvscope::model::ops::attend(query, keys, values, mask, 0.2), fused));
        }
    }
}

TEST(DecodeAttentionTest, ARowThatSeesNoKeyLeavesTheStepToEagerAttention) {
    if (!avx2Kernels()) {
        GTEST_SKIP() << "this processor has no AVX2";
    }
    // Batch row 1 is all padding: eager attention spreads its row evenly over every key.
    const at::Tensor query = seededNormal({2, 4, 1, 32}, 1);
    const at::Tensor keys = cacheView(2, 2, 90, 32, 2);
    const at::Tensor values = cacheView(2, 2, 90, 32, 3);
    at::Tensor mask = at::ones({2, 1, 1, 90}, at::kBool);
    mask[1].fill_(false);
    ASSERT_TRUE(DecodeAttention::fuses(query, keys, values, mask));
    EXPECT_FALSE(DecodeAttention::attend(query, keys, values, mask, 0.25).defined());
    EXPECT_LE(maxAbsDifference(kvscope::model::ops::attend(query, keys, values, mask, 0.25),
                               eagerAttention(query, keys, values, mask, 0.25)),
              2e-6);
}

TEST(DecodeAttentionTest, FusesOnlyFewRowsOfCpuFloatOperandsWithABooleanMaskOfTheirShape) {
    if (!avx2Kernels()) {
        GTEST_SKIP() << "this processor has no AVX2: the fused step never runs";
    }
    const at::Tensor query = seededNormal({1, 8, 1, 64}, 1);
    const at::Tensor keys = cacheView(1, 2, 40, 64, 2);
    const at::Tensor mask = at::ones({1, 1, 1, 40}, at::kBool);
    EXPECT_TRUE(DecodeAttention::fuses(query, keys, keys, mask));
    EXPECT_TRUE(DecodeAttention::fuses(query, keys, keys, at::Tensor()));
    EXPECT_TRUE(DecodeAttention::fuses(seededNormal({1, 8, 4, 64}, 3), keys, keys, at::Tensor()));  // 16 rows
    EXPECT_FALSE(DecodeAttention::fuses(seededNormal({1, 8, 5, 64}, 3), keys, keys, at::Tensor()));  // 20 rows
    EXPECT_FALSE(DecodeAttention::fuses(query.to(at::kDouble), keys, keys, mask));
    EXPECT_FALSE(DecodeAttention::fuses(query, keys, keys, mask.to(at::kFloat)));
    EXPECT_FALSE(DecodeAttention::fuses(query, keys, keys, at::ones({1, 1, 1, 39}, at::kBool)));
    EXPECT_FALSE(DecodeAttention::fuses(query, keys, keys, at::ones({1, 2, 1, 40}, at::kBool)));
    EXPECT_FALSE(DecodeAttention::fuses(seededNormal({1, 8, 1, 24}, 4), cacheView(1, 2, 40, 24, 5),
                                        cacheView(1, 2, 40, 24, 6), mask));
    EXPECT_FALSE(DecodeAttention::fuses(query, keys, seededNormal({1, 2, 64, 40}, 7).transpose(2, 3), mask));
    EXPECT_FALSE(DecodeAttention::fuses(seededNormal({1, 7, 1, 64}, 8), keys, keys, mask));  // 7 heads over 2
    const KernelLevel before = BlockType::kernelLevel();
    BlockType::useKernelLevel(KernelLevel::Portable);
    EXPECT_FALSE(DecodeAttention::fuses(query, keys, keys, mask));
    BlockType::useKernelLevel(before);
}
