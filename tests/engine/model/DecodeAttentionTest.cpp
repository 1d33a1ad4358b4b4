// SPDX-License-Identifier: GPL-3.0-or-later
// A decode step's attention kernels against LibTorch's products: the scores and the weighted values of each KV
// head's grouped query rows, over caches held as a wider buffer's first rows (as SequenceBuffer hands them out),
// for row counts on both sides of the kernels' four-row groups and key counts past one scoring task's 256; then
// ops::attend with and without them (processors without AVX2 take LibTorch's path) gives the same outputs.
#include "DecodeAttention.h"

#include "kvscope/gguf/BlockType.h"
#include "kvscope/model/TensorOps.h"

#include "ModelTestHelpers.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

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
