// SPDX-License-Identifier: GPL-3.0-or-later
// The model's building blocks where they save memory: a 2-byte weight widened a block of rows at a time
// gives what the weight widened whole gives, and attention in chunks of query rows gives the unchunked
// result (output, weights, each chunk's weights in row order) for lengths around the chunk size.
#include "kvscope/model/TensorOps.h"
#include "kvscope/gguf/BlockType.h"

#include "ModelTestHelpers.h"

#include <ATen/ATen.h>
#include <functional>
#include <gtest/gtest.h>

namespace ops = kvscope::model::ops;
using kvscope::testing::maxAbsDifference;

namespace {

at::Tensor randomTensor(at::IntArrayRef shape, uint64_t seed) {
    auto generator = at::make_generator<at::CPUGeneratorImpl>(seed);
    return at::randn(shape, generator, at::TensorOptions().dtype(at::kFloat));
}

/// Runs `check` at the portable kernel level and at the highest this processor runs, then restores the highest.
void atEveryKernelLevel(const std::function<void()>& check) {
    using kvscope::gguf::BlockType;
    for (const auto level : {kvscope::gguf::KernelLevel::Portable, BlockType::supportedKernelLevel()}) {
        SCOPED_TRACE(BlockType::kernelLevelName(BlockType::useKernelLevel(level)));
        check();
    }
    BlockType::useKernelLevel(BlockType::supportedKernelLevel());
}

/// Causal mask [1, 1, t, past + t] of t new rows after `past` cached ones.
at::Tensor causalMask(int64_t length, int64_t past) {
    return at::ones({length, past + length}, at::kBool).tril(past).view({1, 1, length, past + length});
}

} // namespace

TEST(TensorOpsTest, TwoByteWeightsWidenPerMatmulToTheWidenedResult) {
    // 6000 x 1000: above the 4M-element block, so the rows are widened in two blocks.
    const at::Tensor input = randomTensor({2, 3, 1000}, 1);
    for (at::ScalarType dtype : {at::kBFloat16, at::kHalf}) {
        const at::Tensor weight = randomTensor({6000, 1000}, 2).to(dtype);
        const at::Tensor bias = randomTensor({6000}, 3).to(dtype);
        const at::Tensor expected = at::linear(input, weight.to(at::kFloat), bias.to(at::kFloat));
        const at::Tensor widened = ops::linear(input, weight, bias);
        EXPECT_EQ(widened.scalar_type(), at::kFloat);
        EXPECT_EQ(widened.sizes(), at::IntArrayRef({2, 3, 6000}));
        EXPECT_LE(maxAbsDifference(widened, expected), 1e-4);
        const at::Tensor small = weight.narrow(0, 0, 100);
        EXPECT_LE(maxAbsDifference(ops::linear(input, small), at::linear(input, small.to(at::kFloat))), 1e-5);
    }
    const at::Tensor table = randomTensor({50, 8}, 4).to(at::kBFloat16);
    const at::Tensor ids = at::tensor({3, 49, 0}, at::kLong).view({1, 3});
    const at::Tensor rows = ops::embed(table, ids);
    EXPECT_EQ(rows.scalar_type(), at::kFloat);
    EXPECT_TRUE(at::equal(rows, at::embedding(table.to(at::kFloat), ids)));
}

TEST(TensorOpsTest, QueryChunkBudgetKeepsScoresNear32MegabytesAndAtLeastOneRow) {
    struct Case {
        int64_t batch, heads, kvLength, rows;
    };
    for (const Case& c : {Case{1, 16, 2048, 256}, Case{1, 16, 4096, 128}, Case{2, 32, 8192, 16},
                          Case{1, 1, 1, 1 << 23}, Case{1, 64, 1 << 20, 1}}) {
        EXPECT_EQ(ops::attentionQueryChunk(c.batch, c.heads, c.kvLength), c.rows)
            << c.batch << "x" << c.heads << "x" << c.kvLength;
    }
}

TEST(TensorOpsTest, AttentionInQueryChunksEqualsTheUnchunkedPath) {
    constexpr int64_t kChunk = 8;
    constexpr int64_t kHeads = 4;
    constexpr int64_t kKvHeads = 2;
    constexpr int64_t kDim = 16;
    struct Case {
        int64_t length; ///< query rows of the pass
        int64_t past;   ///< cached rows before them
        double softcap; ///< 0: none
        bool hideSlots; ///< a masking press hides slots per KV head
    };
    const std::vector<Case> cases = {{1, 0, 0.0, false},  {7, 0, 0.0, false},  {8, 0, 0.0, false},
                                     {9, 0, 0.0, false},  {16, 0, 0.0, false}, {17, 0, 0.0, false},
                                     {23, 5, 0.0, false}, {9, 3, 30.0, false}, {17, 4, 0.0, true},
                                     {1, 12, 0.0, true}};
    uint64_t seed = 10;
    for (const Case& c : cases) {
        SCOPED_TRACE("length " + std::to_string(c.length) + ", past " + std::to_string(c.past));
        const int64_t kv = c.past + c.length;
        const at::Tensor query = randomTensor({2, kHeads, c.length, kDim}, seed++);
        const at::Tensor keys = randomTensor({2, kKvHeads, kv, kDim}, seed++);
        const at::Tensor values = randomTensor({2, kKvHeads, kv, kDim}, seed++);
        const at::Tensor mask = causalMask(c.length, c.past);
        at::Tensor hidden;
        if (c.hideSlots) {
            hidden = at::zeros({2, kKvHeads, 3}, at::kBool);
            hidden.select(1, 0).select(1, 1).fill_(true); // KV head 0 hides slot 1
            hidden.select(1, 1).select(1, 2).fill_(true); // KV head 1 hides slot 2
        }
        at::Tensor wholeWeights;
        const at::Tensor whole =
            ops::attend(query, keys, values, mask, 0.25, c.softcap, &wholeWeights, hidden, {},
                        /*queryChunk=*/1 << 20);
        at::Tensor chunkedWeights;
        std::vector<int64_t> firstRows;
        at::Tensor assembled;
        const at::Tensor chunked = ops::attend(
            query, keys, values, mask, 0.25, c.softcap, &chunkedWeights, hidden,
            [&](const at::Tensor& weights, int64_t firstQuery) {
                EXPECT_LE(weights.size(2), kChunk);
                firstRows.push_back(firstQuery);
                assembled = assembled.defined() ? at::cat({assembled, weights}, 2) : weights;
            },
            kChunk);
        EXPECT_EQ(chunked.sizes(), at::IntArrayRef({2, c.length, kHeads * kDim}));
        EXPECT_LE(maxAbsDifference(chunked, whole), 1e-6);
        EXPECT_LE(maxAbsDifference(chunkedWeights, wholeWeights), 1e-6);
        EXPECT_LE(maxAbsDifference(assembled, wholeWeights), 1e-6);
        std::vector<int64_t> expectedRows;
        for (int64_t first = 0; first < c.length; first += kChunk) {
            expectedRows.push_back(first);
        }
        EXPECT_EQ(firstRows, expectedRows);
        // The oracle: row by row, each query head against its KV head's keys, causal.
        const int64_t row = c.length - 1;
        for (int64_t head = 0; head < kHeads; ++head) {
            const int64_t kvHead = head / (kHeads / kKvHeads);
            at::Tensor scores = at::mv(keys[0][kvHead], query[0][head][row]) * 0.25;
            if (c.softcap > 0.0) {
                scores = at::tanh(scores / c.softcap) * c.softcap;
            }
            if (c.hideSlots) {
                scores[kvHead == 0 ? 1 : 2] = -1e30;
            }
            const at::Tensor expected = at::mv(values[0][kvHead].t(), at::softmax(scores, 0));
            EXPECT_LE(maxAbsDifference(chunked[0][row].narrow(0, head * kDim, kDim), expected), 1e-5) << head;
        }
    }
}

TEST(TensorOpsTest, RmsNormEqualsTheTensorFormula) {
    // rmsNorm's own loop, a decode step's rows on the calling thread and a prompt's ({1, 300, 576}) on the kernel
    // threads, as the reference's x * rsqrt(mean(x^2) + eps) * w (Gemma's * (1 + w)), contiguous and strided,
    // rows of whole vectors and with a tail (100), at every kernel level this processor runs.
    atEveryKernelLevel([] {
        for (const bool addOne : {false, true}) {
            for (const auto& shape : std::vector<std::vector<int64_t>>{
                     {1, 1, 576}, {1, 4, 1, 256}, {2, 3, 640}, {1, 300, 576}, {2, 5, 100}}) {
                const at::Tensor input = randomTensor(shape, 11) * 3.0;
                const at::Tensor weight = randomTensor({shape.back()}, 12);
                const at::Tensor expected =
                    input * at::rsqrt(input.pow(2).mean(-1, true) + 1e-6) * (addOne ? weight + 1.0 : weight);
                EXPECT_LE(maxAbsDifference(ops::rmsNorm(input, weight, 1e-6, addOne), expected), 2e-6);
                const at::Tensor strided = input.transpose(0, 1);
                const at::Tensor stridedExpected = expected.transpose(0, 1);
                EXPECT_LE(maxAbsDifference(ops::rmsNorm(strided, weight, 1e-6, addOne), stridedExpected), 2e-6);
            }
        }
    });
    // A wrong eps or a dropped weight shows.
    const at::Tensor input = randomTensor({1, 1, 64}, 13);
    const at::Tensor weight = randomTensor({64}, 14);
    const at::Tensor expected = input * at::rsqrt(input.pow(2).mean(-1, true) + 1e-6) * weight;
    EXPECT_GT(maxAbsDifference(ops::rmsNorm(input, weight, 1e-1, false), expected), 1e-3);
    EXPECT_GT(maxAbsDifference(ops::rmsNorm(input, weight, 1e-6, true), expected), 1e-3);
}

TEST(TensorOpsTest, GatedActivationEqualsTheTensorFormula) {
    // act(gate) * up in one loop per row (SiLU, GELU's tanh form), as LibTorch's activation and product give it to
    // within float rounding: a decode step's row and a prompt's rows, the gate and up a stacked product's halves
    // (rows strided), values out to +-100 (exp's clamps), at every kernel level this processor runs.
    atEveryKernelLevel([] {
        for (const int64_t length : {int64_t{1}, int64_t{300}}) {
            const at::Tensor stacked = randomTensor({1, length, 2 * 1536}, 31) * 4.0;
            stacked.narrow(-1, 0, 8).copy_(at::tensor({-100.0f, -90.0f, -20.0f, -1e-4f, 1e-4f, 20.0f, 90.0f, 100.0f}));
            const at::Tensor gate = stacked.narrow(-1, 0, 1536);
            const at::Tensor up = stacked.narrow(-1, 1536, 1536);
            // Within a few float roundings of gate * up (GELU's 1 + tanh cancels where the gate is negative, in
            // either computation).
            const auto withinRounding = [&](const at::Tensor& actual, const at::Tensor& expected) {
                return ((actual - expected).abs() <= (gate * up).abs() * 1e-6).all().item<bool>();
            };
            const at::Tensor silu = ops::gatedActivation(gate, up, kvscope::model::Activation::Silu);
            EXPECT_TRUE(withinRounding(silu, at::silu(gate) * up)) << length;
            const at::Tensor gelu = ops::gatedActivation(gate, up, kvscope::model::Activation::GeluTanh);
            EXPECT_TRUE(withinRounding(gelu, at::gelu(gate, "tanh") * up)) << length;
            EXPECT_EQ(gelu.sizes(), gate.sizes());
            // GELU's erf form keeps LibTorch's; an activation swapped shows.
            EXPECT_TRUE(at::equal(ops::gatedActivation(gate, up, kvscope::model::Activation::Gelu),
                                  at::gelu(gate) * up));
            EXPECT_FALSE(at::allclose(silu, gelu, 1e-3, 1e-3));
        }
    });
}

TEST(TensorOpsTest, RotaryEqualsTheTensorFormula) {
    // applyRotary's own loop, a decode step's rows and a prompt's (700 rows, on the kernel threads), as the
    // reference's x * cos + rotate_half(x) * sin, bit for bit (the same float products and sums), on a head-split
    // view, heads of whole vectors (64) and with a tail (40), at every kernel level this processor runs.
    atEveryKernelLevel([] {
        for (const int64_t dim : {int64_t{64}, int64_t{40}}) {
            for (const int64_t length : {int64_t{1}, int64_t{3}, int64_t{700}}) {
                const at::Tensor flat = randomTensor({2, length, 4 * dim}, 21);
                const at::Tensor x = flat.view({2, length, 4, dim}).transpose(1, 2);  // [B, H, T, D] as splitHeads
                const at::Tensor positions = at::arange(length, at::kLong).unsqueeze(0).expand({2, length}) + 5;
                const at::Tensor inverse = ops::inverseFrequencies(dim, 10000.0, std::nullopt, at::kCPU);
                const auto [cos, sin] = ops::rotary(positions, inverse);
                const at::Tensor rotated = at::cat({-x.narrow(-1, dim / 2, dim / 2), x.narrow(-1, 0, dim / 2)}, -1);
                const at::Tensor expected = x * cos + rotated * sin;
                EXPECT_TRUE(at::equal(ops::applyRotary(x, cos, sin), expected)) << dim << " wide, " << length << " rows";
            }
        }
    });
    // Swapped tables show.
    const at::Tensor x = randomTensor({1, 2, 1, 16}, 22);
    const auto [cos, sin] = ops::rotary(at::full({1, 1}, 7, at::kLong), ops::inverseFrequencies(16, 10000.0, std::nullopt, at::kCPU));
    EXPECT_FALSE(at::allclose(ops::applyRotary(x, cos, sin), ops::applyRotary(x, sin, cos)));
}
