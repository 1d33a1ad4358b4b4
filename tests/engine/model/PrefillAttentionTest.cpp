// SPDX-License-Identifier: GPL-3.0-or-later
// A prompt's tiled attention against eager attention computed here from LibTorch's operations in double (each query head
// against its KV head's keys, scores * scale, masked with the dtype's lowest value, softmax, times the values):
// causal prompts at the real models' shapes past several blocks and tiles, a prompt after cached rows, a sliding
// window, left padding, masks with holes, no mask, more grouped heads than a block's rows, strided caches.
#include "PrefillAttention.h"

#include "kvscope/gguf/BlockType.h"
#include "kvscope/model/TensorOps.h"

#include "ModelTestHelpers.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

using kvscope::gguf::BlockType;
using kvscope::gguf::KernelLevel;
using kvscope::model::ops::PrefillAttention;
using kvscope::testing::maxAbsDifference;

namespace prefill_attention_test {

at::Tensor normal(at::IntArrayRef shape, uint64_t seed) {
    auto generator = at::make_generator<at::CPUGeneratorImpl>(seed);
    return at::randn(shape, generator, at::TensorOptions().dtype(at::kFloat));
}

/// Eager attention, [B, T, Hq * D]: the oracle.
at::Tensor eager(const at::Tensor& query, const at::Tensor& keys, const at::Tensor& values, const at::Tensor& mask,
                 double scale) {
    const int64_t groups = query.size(1) / keys.size(1);
    const at::Tensor k = keys.repeat_interleave(groups, 1);
    const at::Tensor v = values.repeat_interleave(groups, 1);
    at::Tensor scores = at::matmul(query, k.transpose(-1, -2)) * scale;
    if (mask.defined()) {
        scores = scores.masked_fill(mask.logical_not(), std::numeric_limits<float>::lowest());
    }
    const at::Tensor output = at::matmul(at::softmax(scores, -1), v);
    return output.transpose(1, 2).reshape({query.size(0), query.size(2), -1});
}

/// Query position past + t sees keys (past + t - window, past + t]; window 0: every earlier key.
at::Tensor promptMask(int64_t rows, int64_t past, int64_t window = 0) {
    const at::Tensor q = at::arange(rows, at::kLong).view({rows, 1}) + past;
    const at::Tensor k = at::arange(past + rows, at::kLong).view({1, past + rows});
    at::Tensor allowed = k <= q;
    if (window > 0) {
        allowed = allowed.logical_and(k > q - window);
    }
    return allowed.view({1, 1, rows, past + rows});
}

bool tilesRun() { return BlockType::supportedKernelLevel() != KernelLevel::Portable; }

} // namespace prefill_attention_test

using namespace prefill_attention_test;

TEST(PrefillAttentionTest, TilesEqualEagerAttention) {
    if (!tilesRun()) {
        GTEST_SKIP() << "this processor has no AVX2: prompts keep LibTorch's products";
    }
    struct Case {
        const char* name;
        int64_t batch, heads, kvHeads, rows, past, dim, window;
        bool holes;  ///< every third key hidden from odd rows, besides the causal mask
        bool masked; ///< false: no mask at all (every row sees every key)
    };
    const std::vector<Case> cases = {
        {"SmolLM2's heads, 300 causal rows", 1, 9, 3, 300, 0, 64, 0, false, true},
        {"Gemma 3's heads, 150 causal rows", 1, 4, 1, 150, 0, 256, 0, false, true},
        {"50 rows after 130 cached", 1, 6, 2, 50, 130, 32, 0, false, true},
        {"a sliding window of 40", 2, 4, 2, 200, 0, 32, 40, false, true},
        {"masks with holes", 1, 2, 1, 90, 10, 16, 0, true, true},
        {"no mask", 2, 3, 3, 70, 5, 8, 0, false, false},
        {"80 query heads over one KV head", 1, 80, 1, 5, 3, 8, 0, false, true},
        {"two rows", 1, 2, 2, 2, 0, 64, 0, false, true},
    };
    uint64_t seed = 200;
    for (const Case& c : cases) {
        SCOPED_TRACE(c.name);
        const int64_t kv = c.past + c.rows;
        // The projection's view [B, T, Hq, D] -> [B, Hq, T, D], and the cache's rows of a larger buffer.
        const at::Tensor query = normal({c.batch, c.rows, c.heads, c.dim}, seed++).transpose(1, 2);
        const at::Tensor keys = normal({c.batch, c.kvHeads, kv + 19, c.dim}, seed++).narrow(2, 0, kv);
        const at::Tensor values = normal({c.batch, c.kvHeads, kv + 19, c.dim}, seed++).narrow(2, 0, kv);
        at::Tensor mask;
        if (c.masked) {
            mask = promptMask(c.rows, c.past, c.window);
            if (c.holes) {
                const at::Tensor odd = (at::arange(c.rows, at::kLong) % 2 == 1).view({1, 1, c.rows, 1});
                const at::Tensor third = (at::arange(kv, at::kLong) % 3 == 1).view({1, 1, 1, kv});
                mask = mask.logical_and(odd.logical_and(third).logical_not());
            }
        }
        ASSERT_TRUE(PrefillAttention::applies(query, keys, values, mask));
        const at::Tensor tiled = PrefillAttention::attend(query, keys, values, mask, 0.3);
        ASSERT_TRUE(tiled.defined());
        EXPECT_EQ(tiled.sizes(), at::IntArrayRef({c.batch, c.rows, c.heads * c.dim}));
        // As near the exact (double) result as eager attention in float is: within twice its rounding.
        const at::Tensor exact = eager(query.to(at::kDouble), keys.to(at::kDouble), values.to(at::kDouble), mask, 0.3);
        const double rounding = maxAbsDifference(eager(query, keys, values, mask, 0.3).to(at::kDouble), exact);
        EXPECT_LE(maxAbsDifference(tiled.to(at::kDouble), exact), std::max(2.0 * rounding, 1e-6));
        // ops::attend takes the tiles and gives the same.
        EXPECT_TRUE(at::equal(kvscope::model::ops::attend(query, keys, values, mask, 0.3), tiled));
    }
}

TEST(PrefillAttentionTest, ARowThatSeesNoKeyLeavesTheWholePromptToEagerAttention) {
    if (!tilesRun()) {
        GTEST_SKIP() << "this processor has no AVX2";
    }
    // Batch row 1 is left-padded by 3: its first three query rows see no key at all, and eager attention spreads
    // them evenly over every key.
    const int64_t rows = 20;
    const at::Tensor query = normal({2, 4, rows, 16}, 1);
    const at::Tensor keys = normal({2, 2, rows, 16}, 2);
    const at::Tensor values = normal({2, 2, rows, 16}, 3);
    const at::Tensor real = at::ones({2, 1, 1, rows}, at::kBool);
    real[1].narrow(-1, 0, 3).fill_(false);
    const at::Tensor mask = promptMask(rows, 0).logical_and(real).logical_and(real.transpose(2, 3));
    ASSERT_TRUE(PrefillAttention::applies(query, keys, values, mask));
    EXPECT_FALSE(PrefillAttention::attend(query, keys, values, mask, 0.25).defined());
    EXPECT_LE(maxAbsDifference(kvscope::model::ops::attend(query, keys, values, mask, 0.25),
                               eager(query, keys, values, mask, 0.25)),
              2e-6);
}

TEST(PrefillAttentionTest, AppliesOnlyToCpuFloatOperandsWithWholeRowsOnAvx2) {
    if (!tilesRun()) {
        GTEST_SKIP() << "this processor has no AVX2: the tiles never apply";
    }
    const at::Tensor query = normal({1, 4, 10, 16}, 1);
    const at::Tensor keys = normal({1, 2, 10, 16}, 2);
    const at::Tensor mask = promptMask(10, 0);
    EXPECT_TRUE(PrefillAttention::applies(query, keys, keys, mask));
    EXPECT_TRUE(PrefillAttention::applies(query, keys, keys, at::Tensor()));
    EXPECT_FALSE(PrefillAttention::applies(query.to(at::kDouble), keys, keys, mask));
    EXPECT_FALSE(PrefillAttention::applies(query, keys, keys, mask.to(at::kFloat)));       // an additive mask
    EXPECT_FALSE(PrefillAttention::applies(query, keys, keys, promptMask(9, 0)));          // the wrong rows
    EXPECT_FALSE(PrefillAttention::applies(normal({1, 3, 10, 16}, 3), keys, keys, mask)); // 3 over 2 heads
    EXPECT_FALSE(PrefillAttention::applies(normal({1, 4, 10, 12}, 3), normal({1, 2, 10, 12}, 4),
                                           normal({1, 2, 10, 12}, 5), mask));         // 12 wide
    const at::Tensor columns = normal({1, 2, 16, 10}, 6).transpose(2, 3);             // strided in D
    EXPECT_FALSE(PrefillAttention::applies(query, columns, keys, mask));
    const KernelLevel before = BlockType::kernelLevel();
    BlockType::useKernelLevel(KernelLevel::Portable);
    EXPECT_FALSE(PrefillAttention::applies(query, keys, keys, mask));
    BlockType::useKernelLevel(before);
}

TEST(PrefillAttentionTest, AttendKeepsEagerAttentionWhereTheWeightsAreRead) {
    if (!tilesRun()) {
        GTEST_SKIP() << "this processor has no AVX2";
    }
    // Asked for the weights (a press reads them), attend computes them and its output is eager attention's, equal to
    // the tiles' within rounding.
    const int64_t rows = 40;
    const at::Tensor query = normal({1, 4, rows, 32}, 7);
    const at::Tensor keys = normal({1, 2, rows, 32}, 8);
    const at::Tensor values = normal({1, 2, rows, 32}, 9);
    const at::Tensor mask = promptMask(rows, 0);
    at::Tensor weights;
    const at::Tensor withWeights = kvscope::model::ops::attend(query, keys, values, mask, 0.2, 0.0, &weights);
    ASSERT_TRUE(weights.defined());
    EXPECT_EQ(weights.sizes(), at::IntArrayRef({1, 4, rows, rows}));
    EXPECT_LE(maxAbsDifference(withWeights, PrefillAttention::attend(query, keys, values, mask, 0.2)), 2e-6);
}
