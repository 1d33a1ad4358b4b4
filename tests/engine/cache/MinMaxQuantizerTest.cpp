// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/MinMaxQuantizer.h"

#include "CacheTestHelpers.h"

#include <ATen/ATen.h>
#include <cmath>
#include <cstdint>
#include <gtest/gtest.h>

namespace kvscope::cache {
namespace {

using test::codes;
using test::expectClose;
using test::maxError;
using test::refuses;
using test::values;
using test::Values;
using test::workedTensor;

struct WorkedInMinMaxQuantizer {
    int nbits;
    int64_t axis;
    int64_t groupSize;
    std::vector<int64_t> groupedShape;
    std::vector<int> codes;
    std::vector<double> scale;
    std::vector<double> offset; ///< the group minimum (quanto's shift is its negation)
    std::vector<double> dequantized;
    double maxError;
};

// Values from running reference_quantizer.MinMaxQuantizedLayer on the worked tensor (CPU, fp32).
const WorkedInMinMaxQuantizer kInt4Axis0{4,
                        0,
                        4,
                        {4, 4},
                        {0, 5, 10, 15, 0, 2, 11, 15, 0, 5, 10, 15, 15, 10, 5, 0},
                        {0.10000000149011612, 0.2666666805744171, 0.020000001415610313, 0.019999997690320015},
                        {0.0, -1.0, 0.10000000149011612, 0.6000000238418579},
                        {0.0, 0.5, 1.0, 1.5, -1.0, -0.46666663885116577, 1.933333396911621, 3.0,
                         0.10000000149011612, 0.20000001788139343, 0.30000001192092896, 0.4000000059604645,
                         0.8999999761581421, 0.800000011920929, 0.699999988079071, 0.6000000238418579},
                        0.0666666030883789};
const WorkedInMinMaxQuantizer kInt2Axis0{2,
                        0,
                        4,
                        {4, 4},
                        {0, 1, 2, 3, 0, 0, 2, 3, 0, 1, 2, 3, 3, 2, 1, 0},
                        {0.5, 1.3333333730697632, 0.10000000149011612, 0.09999998658895493},
                        {0.0, -1.0, 0.10000000149011612, 0.6000000238418579},
                        {0.0, 0.5, 1.0, 1.5, -1.0, -1.0, 1.6666667461395264, 3.0, 0.10000000149011612,
                         0.20000000298023224, 0.30000001192092896, 0.4000000059604645, 0.8999999761581421,
                         0.800000011920929, 0.699999988079071, 0.6000000238418579},
                        0.5};
const WorkedInMinMaxQuantizer kInt4AxisMinus1{
    4,
    -1,
    2,
    {2, 8},
    {0, 15, 15, 15, 0, 0, 15, 15, 15, 0, 0, 0, 15, 15, 0, 0},
    {0.006666666828095913, 0.020000001415610313, 0.046666666865348816, 0.07333333790302277,
     0.12666666507720947, 0.08666666597127914, 0.08666666597127914, 0.1600000113248825},
    {0.0, 0.20000000298023224, 0.30000001192092896, 0.4000000059604645, -1.0, -0.5, 0.699999988079071,
     0.6000000238418579},
    {0.0, 0.5, 1.0, 1.5, -1.0, -0.5, 2.0, 3.0, 0.10000000149011612, 0.20000000298023224, 0.30000001192092896,
     0.4000000059604645, 0.8999999761581421, 0.7999999523162842, 0.699999988079071, 0.6000000238418579},
    5.960464477539063e-08};
const WorkedInMinMaxQuantizer kInt2AxisMinus1{
    2,
    -1,
    2,
    {2, 8},
    {0, 3, 3, 3, 0, 0, 3, 3, 3, 0, 0, 0, 3, 3, 0, 0},
    {0.03333333507180214, 0.10000000149011612, 0.23333333432674408, 0.36666667461395264, 0.6333333253860474,
     0.43333330750465393, 0.43333330750465393, 0.800000011920929},
    {0.0, 0.20000000298023224, 0.30000001192092896, 0.4000000059604645, -1.0, -0.5, 0.699999988079071,
     0.6000000238418579},
    {0.0, 0.5, 1.0, 1.5, -1.0, -0.5, 2.0, 3.0, 0.10000000894069672, 0.20000000298023224, 0.30000001192092896,
     0.4000000059604645, 0.8999999761581421, 0.7999999523162842, 0.699999988079071, 0.6000000238418579},
    5.960464477539063e-08};
const WorkedInMinMaxQuantizer kInt8Axis0{
    8,
    0,
    4,
    {4, 4},
    {0, 85, 170, 255, 0, 32, 191, 255, 0, 85, 170, 255, 255, 170, 85, 0},
    {0.0058823530562222, 0.01568627543747425, 0.0011764706578105688, 0.0011764704249799252},
    {0.0, -1.0, 0.10000000149011612, 0.6000000238418579},
    {0.0, 0.5, 1.0, 1.5, -1.0, -0.498039186000824, 1.9960784912109375, 3.0, 0.10000000149011612,
     0.20000001788139343, 0.30000001192092896, 0.4000000059604645, 0.8999999761581421, 0.800000011920929,
     0.699999988079071, 0.6000000238418579},
    0.0039215087890625};

void checkWorkedInMinMaxQuantizer(const WorkedInMinMaxQuantizer& worked) {
    SCOPED_TRACE("int" + std::to_string(worked.nbits) + " axis " + std::to_string(worked.axis) + " gs " +
                 std::to_string(worked.groupSize));
    const MinMaxQuantizer quantizer(worked.nbits, worked.groupSize);
    const at::Tensor x = workedTensor();
    const QuantizedTensor q = quantizer.quantize(x, worked.axis);
    EXPECT_EQ(q.codes.scalar_type(), at::kByte); // unpacked: one code per element
    EXPECT_EQ(q.codes.sizes().vec(), worked.groupedShape);
    EXPECT_EQ(codes(q.codes), worked.codes);
    expectClose(values(q.scale), worked.scale);
    expectClose(values(q.offset), worked.offset);
    EXPECT_EQ(q.axis, worked.axis);
    EXPECT_EQ(q.shape, (std::vector<int64_t>{1, 1, 2, 8}));
    const at::Tensor dequantized = quantizer.dequantize(q);
    EXPECT_EQ(dequantized.sizes(), x.sizes());
    expectClose(values(dequantized), worked.dequantized);
    EXPECT_NEAR(maxError(dequantized, x), worked.maxError, 1e-6);
}

TEST(MinMaxQuantizerTest, WorkedExampleInt4Axis0) {
    checkWorkedInMinMaxQuantizer(kInt4Axis0);
}
TEST(MinMaxQuantizerTest, WorkedExampleInt2Axis0) {
    checkWorkedInMinMaxQuantizer(kInt2Axis0);
}
TEST(MinMaxQuantizerTest, WorkedExampleInt4AxisMinus1) {
    checkWorkedInMinMaxQuantizer(kInt4AxisMinus1);
}
TEST(MinMaxQuantizerTest, WorkedExampleInt2AxisMinus1) {
    checkWorkedInMinMaxQuantizer(kInt2AxisMinus1);
}
TEST(MinMaxQuantizerTest, WorkedExampleInt8Axis0) {
    checkWorkedInMinMaxQuantizer(kInt8Axis0);
}

TEST(MinMaxQuantizerTest, RoundsHalfToEven) {
    // scale 1: (0.5 - 0) / 1 rounds to 0 and 2.5 to 2 (std::round would give 1 and 3).
    const MinMaxQuantizer quantizer(2, 4);
    const QuantizedTensor q = quantizer.quantize(at::tensor({0.f, .5f, 2.5f, 3.f}).view({1, 1, 1, 4}), 0);
    EXPECT_EQ(codes(q.codes), (std::vector<int>{0, 0, 2, 3}));
    EXPECT_EQ(values(quantizer.dequantize(q)), (Values{0, 0, 2, 3}));
}

TEST(MinMaxQuantizerTest, ConstantGroupUsesTheMinimumScaleAndIsExact) {
    const MinMaxQuantizer quantizer(4, 4);
    const at::Tensor x = at::full({1, 1, 1, 4}, 2.5f);
    const QuantizedTensor q = quantizer.quantize(x, 0);
    EXPECT_FLOAT_EQ(values(q.scale)[0], 1e-8f);
    EXPECT_EQ(codes(q.codes), (std::vector<int>{0, 0, 0, 0}));
    EXPECT_EQ(values(quantizer.dequantize(q)), (Values{2.5f, 2.5f, 2.5f, 2.5f}));
}

TEST(MinMaxQuantizerTest, AxisMinus1GroupsStraddleHeadsWhenTokensAreNotAMultiple) {
    // [1, 2, 3, 2] grouped per channel over 2 consecutive rows of the [6, 2] matrix (b, h, s) x d:
    // the second group spans the last token of head 0 and the first token of head 1.
    const MinMaxQuantizer quantizer(8, 2);
    at::Tensor x = at::arange(12, at::kFloat).view({1, 2, 3, 2});
    const QuantizedTensor q = quantizer.quantize(x, -1);
    EXPECT_EQ(q.codes.sizes(), (at::IntArrayRef{2, 6}));
    // Column c = d * 3 + k holds rows 2k, 2k + 1 of channel d: minima 0, 4, 8 | 1, 5, 9.
    expectClose(values(q.offset), {0, 4, 8, 1, 5, 9});
    EXPECT_LT(maxError(quantizer.dequantize(q), x), 1e-6);
}

TEST(MinMaxQuantizerTest, KeepsTheDtype) {
    const MinMaxQuantizer quantizer(8, 4);
    const at::Tensor x = workedTensor().to(at::kDouble);
    const at::Tensor dequantized = quantizer.dequantize(quantizer.quantize(x, 0));
    EXPECT_EQ(dequantized.scalar_type(), at::kDouble);
    EXPECT_LT(maxError(dequantized, x), 0.004);
}

TEST(MinMaxQuantizerTest, GroupSizeMustDivideTheAxisElements) {
    const MinMaxQuantizer quantizer(4, 64);
    // hf-cache.md 3.1: (1, 8, 7, 128) along axis -1 has 56 rows, not a multiple of 64.
    EXPECT_TRUE(refuses(
        [&] {
            quantizer.checkShape({1, 8, 7, 128}, -1);
        },
        ErrorKind::Value, {"Group size (64) must be a divisor of (56)", "(1, 8, 7, 128)"}));
    EXPECT_NO_THROW(quantizer.checkShape({1, 8, 8, 128}, -1));
    EXPECT_NO_THROW(quantizer.checkShape({1, 8, 7, 128}, 0));
    const MinMaxQuantizer wide(4, 32);
    EXPECT_TRUE(refuses([&] { (void)wide.quantize(workedTensor(), 0); }, ErrorKind::Value,
                        {"Group size (32) must be a divisor of (16)"}));
    // An empty sequence has no rows to group: the reference's group() says "divisor of (0)" too.
    EXPECT_TRUE(refuses(
        [&] {
            quantizer.checkShape({1, 1, 0, 4}, -1);
        },
        ErrorKind::Value, {"Group size (64) must be a divisor of (0)"}));
    EXPECT_TRUE(refuses([&] { quantizer.checkShape({0, 1, 2, 4}, 0); }, ErrorKind::Value, {"empty"}));
}

TEST(MinMaxQuantizerTest, RefusesUnsupportedBitsAxesAndGroupSizes) {
    for (int nbits : {2, 4, 8}) {
        EXPECT_NO_THROW(MinMaxQuantizer(nbits, 4));
    }
    for (int nbits : {1, 3, 5, 16}) {
        EXPECT_TRUE(refuses([&] { MinMaxQuantizer quantizer(nbits, 4); }, ErrorKind::Value,
                            {"nbits", "[`2`, `4`, `8`]", "got " + std::to_string(nbits)}));
    }
    const MinMaxQuantizer quantizer(4, 4);
    EXPECT_NO_THROW(quantizer.checkAxis(0, "axis_key"));
    EXPECT_NO_THROW(quantizer.checkAxis(-1, "axis_key"));
    for (int64_t axis : {1, 2, -2}) {
        EXPECT_TRUE(refuses([&] { quantizer.checkAxis(axis, "axis_value"); }, ErrorKind::Value,
                            {"`axis_value`", "[`0`, `-1`]", "got " + std::to_string(axis)}));
    }
    EXPECT_TRUE(refuses([] { MinMaxQuantizer quantizer(4, 0); }, ErrorKind::Value, {"q_group_size", "0"}));
}

TEST(MinMaxQuantizerTest, TokenLocalOnlyForAxis0GroupsInsideOneToken) {
    const MinMaxQuantizer quantizer(4, 4);
    EXPECT_TRUE(quantizer.isTokenLocal(0, 8));
    EXPECT_TRUE(quantizer.isTokenLocal(0, 4));
    EXPECT_FALSE(quantizer.isTokenLocal(0, 2)); // a group spans two tokens
    EXPECT_FALSE(quantizer.isTokenLocal(0, 6));
    EXPECT_FALSE(quantizer.isTokenLocal(-1, 8));
}

TEST(MinMaxQuantizerTest, NameBitsGroupAndStorage) {
    const MinMaxQuantizer quantizer(4, 4);
    EXPECT_EQ(quantizer.backend(), kvscope::config::QuantizerBackend::MinMax);
    EXPECT_EQ(quantizer.nbits(), 4);
    EXPECT_EQ(quantizer.groupSize(), 4);
    // 16 codes of 4 bits (8 bytes) plus a float scale and offset for each of the 4 groups.
    EXPECT_EQ(quantizer.storageBytes(16), 8 + 4 * 2 * 4);
    EXPECT_EQ(MinMaxQuantizer(2, 64).storageBytes(65), 17 + 2 * 2 * 4);
}

/// Shapes [batch, heads, tokens, headDim] with groups that fit both axes, as QuantizedLayer stores them.
struct Case {
    int nbits;
    int64_t group;
    int64_t axis;
    std::vector<int64_t> shape;
};

std::vector<Case> kernelCases() {
    std::vector<Case> cases;
    for (int nbits : {2, 4, 8}) {
        cases.push_back({nbits, 64, 0, {1, 8, 37, 64}});
        cases.push_back({nbits, 32, 0, {2, 4, 5, 64}});
        cases.push_back({nbits, 16, -1, {1, 8, 32, 64}});
        cases.push_back({nbits, 64, -1, {2, 2, 64, 16}});
    }
    return cases;
}

/// Values with ties, duplicates and constant groups beside Gaussian noise: the cases rounding can flip.
at::Tensor kernelInput(const std::vector<int64_t>& shape, uint64_t seed) {
    auto generator = at::make_generator<at::CPUGeneratorImpl>(seed);
    at::Tensor values = at::randn(shape, generator, at::TensorOptions().dtype(at::kFloat));
    at::Tensor flat = values.view({-1});
    flat.narrow(0, 0, 64).fill_(0.25f);                                           // a constant group
    flat.narrow(0, 64, 64).copy_(at::arange(64, at::kFloat).div_(4.0).sub_(8.0)); // exact quarters
    return values;
}

bool sameBits(const at::Tensor& a, const at::Tensor& b) {
    return a.sizes() == b.sizes() && a.scalar_type() == b.scalar_type() && a.cpu().equal(b.cpu());
}

TEST(MinMaxQuantizerTest, LibTorchKernelsAndFusedRoundTripAreBitIdenticalOnCpu) {
    for (const Case& c : kernelCases()) {
        const MinMaxQuantizer fused(c.nbits, c.group);
        const MinMaxQuantizer libtorch(c.nbits, c.group, MinMaxQuantizer::Kernels::LibTorch);
        EXPECT_EQ(fused.kernels(), MinMaxQuantizer::Kernels::Fused);
        EXPECT_EQ(libtorch.kernels(), MinMaxQuantizer::Kernels::LibTorch);
        const at::Tensor input = kernelInput(c.shape, 7);
        EXPECT_TRUE(sameBits(fused.roundTrip(input, c.axis), libtorch.roundTrip(input, c.axis)))
            << "nbits " << c.nbits << " axis " << c.axis;
        EXPECT_TRUE(sameBits(libtorch.roundTrip(input, c.axis), libtorch.dequantize(libtorch.quantize(input, c.axis))));
    }
}

// On CUDA the fused kernels (where this build has them) must reproduce LibTorch's CUDA operations bit for
// bit: codes, scales, offsets, dequantized values and the round trip.
TEST(MinMaxQuantizerTest, CudaKernelsMatchTheLibTorchPathBitForBit) {
    if (!at::hasCUDA()) {
        GTEST_SKIP() << "no CUDA device in this build or machine";
    }
    EXPECT_TRUE(MinMaxQuantizer::fusedCudaKernels()) << "a CUDA build should have compiled the fused kernels";
    uint64_t seed = 11;
    for (const Case& c : kernelCases()) {
        const MinMaxQuantizer fused(c.nbits, c.group);
        const MinMaxQuantizer libtorch(c.nbits, c.group, MinMaxQuantizer::Kernels::LibTorch);
        const at::Tensor input = kernelInput(c.shape, seed++).to(at::kCUDA);
        const QuantizedTensor a = fused.quantize(input, c.axis);
        const QuantizedTensor b = libtorch.quantize(input, c.axis);
        const std::string where = "nbits " + std::to_string(c.nbits) + " axis " + std::to_string(c.axis);
        EXPECT_TRUE(sameBits(a.codes, b.codes)) << where;
        EXPECT_TRUE(sameBits(a.scale, b.scale)) << where;
        EXPECT_TRUE(sameBits(a.offset, b.offset)) << where;
        EXPECT_TRUE(sameBits(fused.dequantize(b), libtorch.dequantize(b))) << where;
        const at::Tensor roundTrip = fused.roundTrip(input, c.axis);
        EXPECT_TRUE(roundTrip.is_cuda());
        EXPECT_TRUE(sameBits(roundTrip, libtorch.roundTrip(input, c.axis))) << where;
        // A strided view is made contiguous first, as QuantizedSequence hands over its store.
        const at::Tensor strided = input.transpose(1, 2).contiguous().transpose(1, 2);
        EXPECT_TRUE(sameBits(fused.roundTrip(strided, c.axis), libtorch.roundTrip(strided, c.axis))) << where;
    }
}

TEST(MinMaxQuantizerTest, CudaRoundTripAgreesWithTheCpuWithinOneRounding) {
    if (!at::hasCUDA()) {
        GTEST_SKIP() << "no CUDA device in this build or machine";
    }
    // LibTorch divides by a CPU scalar as a multiply by its reciprocal on CUDA, so the scale may differ
    // from the CPU's in the last bit; values stay within a fraction of a quantization step.
    for (const Case& c : kernelCases()) {
        const MinMaxQuantizer quantizer(c.nbits, c.group);
        const at::Tensor input = kernelInput(c.shape, 3);
        const at::Tensor onCpu = quantizer.roundTrip(input, c.axis);
        const at::Tensor onCuda = quantizer.roundTrip(input.to(at::kCUDA), c.axis).cpu();
        const double step = (input.max() - input.min()).item<double>() / ((1 << c.nbits) - 1);
        EXPECT_LE(maxError(onCpu, onCuda), step * 1.0001) << "nbits " << c.nbits << " axis " << c.axis;
    }
}

} // namespace
} // namespace kvscope::cache
