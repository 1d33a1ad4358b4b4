// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/HqqQuantizer.h"

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

struct Worked {
    int nbits;
    int64_t axis;
    std::vector<int64_t> groupedShape;
    std::vector<int64_t> metaShape;
    std::vector<int> codes;          ///< unpacked, in the grouped layout
    std::vector<double> scale;       ///< HQQ's meta.scale = 1 / s
    std::vector<double> zero;        ///< after the proximal optimiser
    std::vector<double> dequantized; ///< empty when not checked element-wise
    double maxError;
};

// Values from running reference_quantizer.HqqQuantizedLayer (optimize=True, legacy solver) on the
// worked tensor with group size 4, CPU fp32; they agree with the hf-cache.md 3.2 table.
const Worked kFourBitAxis1{
    4,
    1,
    {4, 4},
    {4, 1},
    {0, 5, 10, 15, 0, 2, 11, 15, 0, 5, 10, 15, 15, 10, 5, 0},
    {0.10000000149011612, 0.2666666805744171, 0.019999999552965164, 0.019999997690320015},
    {0.0, 3.71875, -5.0, -30.0000057220459},
    {0.0, 0.5, 1.0, 1.5, -0.9916667342185974, -0.4583333432674408, 1.9416667222976685, 3.008333444595337,
     0.09999999403953552, 0.19999998807907104, 0.29999998211860657, 0.3999999761581421, 0.9000000357627869,
     0.8000000715255737, 0.7000000476837158, 0.6000000238418579},
    0.05833327770233154};
const Worked kTwoBitAxis1{2,
                          1,
                          {4, 4},
                          {4, 1},
                          {0, 1, 2, 3, 0, 0, 2, 3, 0, 1, 2, 3, 3, 2, 1, 0},
                          {0.5, 1.3333333730697632, 0.10000000149011612, 0.09999997913837433},
                          {0.0, 0.6735059022903442, -1.0, -6.000001907348633},
                          {0.0, 0.5, 1.0, 1.5, -0.898007869720459, -0.898007869720459, 1.7686588764190674,
                           3.10199236869812, 0.10000000149011612, 0.20000000298023224, 0.30000001192092896,
                           0.4000000059604645, 0.8999999761581421, 0.800000011920929, 0.7000000476837158,
                           0.6000000834465027},
                          0.398007869720459};
const Worked kFourBitAxis0{4,
                           0,
                           {4, 4},
                           {1, 4},
                           {8, 12, 6, 6, 0, 0, 15, 15, 9, 8, 0, 0, 15, 15, 4, 1},
                           {0.12666666507720947, 0.08666666597127914, 0.1133333370089531, 0.1733333319425583},
                           {8.0, 5.865384101867676, -2.5735292434692383, -2.432692766189575},
                           {0.0, 0.5316666960716248, 0.971666693687439, 1.4616667032241821,
                            -1.0133333206176758, -0.5083332657814026, 1.991666555404663, 3.0216667652130127,
                            0.12666666507720947, 0.18500004708766937, 0.2916666567325592, 0.4216667413711548,
                            0.8866666555404663, 0.7916666865348816, 0.7450000047683716, 0.5950000882148743},
                           0.04500001668930054};
const Worked kEightBitAxis1{
    8,
    1,
    {4, 4},
    {4, 1},
    {0, 85, 170, 255, 0, 32, 191, 255, 0, 85, 170, 255, 255, 170, 85, 0},
    {0.0058823530562222, 0.01568627543747425, 0.001176470541395247, 0.0011764703085646033},
    {0.0, 63.71875, -85.0, -510.0001525878906},
    {},
    0.0034312009811401367};
const Worked kOneBitAxis1{
    1,
    1,
    {4, 4},
    {4, 1},
    {0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 1, 1, 0, 0},
    {1.5, 4.0, 0.30000001192092896, 0.2999999523162842},
    {3.725290298461914e-09, 0.24779532849788666, -0.3333333432674408, -2.000000476837158},
    {},
    1.0088186264038086};
const Worked kThreeBitAxis0{
    3,
    0,
    {4, 4},
    {1, 4},
    {4, 5, 3, 3, 0, 0, 7, 7, 4, 4, 0, 0, 7, 7, 2, 1},
    {0.27142855525016785, 0.18571428954601288, 0.2428571581840515, 0.37142857909202576},
    {3.75, 2.653846025466919, -1.1176466941833496, -0.9519232511520386},
    {},
    0.12500005960464478};

void checkWorked(const Worked& worked) {
    SCOPED_TRACE(std::to_string(worked.nbits) + "-bit axis " + std::to_string(worked.axis));
    const HqqQuantizer quantizer(worked.nbits, 4);
    const at::Tensor x = workedTensor();
    const QuantizedTensor q = quantizer.quantize(x, worked.axis);
    EXPECT_EQ(q.codes.scalar_type(), at::kByte);
    EXPECT_EQ(q.codes.sizes().vec(), worked.groupedShape);
    EXPECT_EQ(q.scale.sizes().vec(), worked.metaShape);
    EXPECT_EQ(q.offset.sizes().vec(), worked.metaShape);
    EXPECT_EQ(codes(q.codes), worked.codes);
    expectClose(values(q.scale), worked.scale);
    expectClose(values(q.offset), worked.zero);
    const at::Tensor dequantized = quantizer.dequantize(q);
    EXPECT_EQ(dequantized.sizes(), x.sizes());
    if (!worked.dequantized.empty()) {
        expectClose(values(dequantized), worked.dequantized);
    }
    EXPECT_NEAR(maxError(dequantized, x), worked.maxError, 1e-6);
}

TEST(HqqQuantizerTest, WorkedExampleFourBitAxis1) {
    checkWorked(kFourBitAxis1);
}
TEST(HqqQuantizerTest, WorkedExampleTwoBitAxis1) {
    checkWorked(kTwoBitAxis1);
}
TEST(HqqQuantizerTest, WorkedExampleFourBitAxis0StridedGroups) {
    checkWorked(kFourBitAxis0);
}
TEST(HqqQuantizerTest, WorkedExampleEightBitAxis1) {
    checkWorked(kEightBitAxis1);
}
TEST(HqqQuantizerTest, WorkedExampleOneBitAxis1) {
    checkWorked(kOneBitAxis1);
}
TEST(HqqQuantizerTest, WorkedExampleThreeBitAxis0) {
    checkWorked(kThreeBitAxis0);
}

TEST(HqqQuantizerTest, TheOptimiserMovesOnlyTheZero) {
    // Group [-1, -.5, 2, 3] at 4 bits starts at s = 3.75, z = 3.75; one proximal step gives 3.71875
    // and the scale stays 1 / s (hf-cache.md 3.2 trace). Without the optimiser the error would be 0.066667.
    const HqqQuantizer quantizer(4, 4);
    const QuantizedTensor q = quantizer.quantize(at::tensor({-1.f, -.5f, 2.f, 3.f}).view({1, 1, 1, 4}), 1);
    EXPECT_FLOAT_EQ(values(q.offset)[0], 3.71875f);
    EXPECT_FLOAT_EQ(values(q.scale)[0], 1.f / 3.75f);
    EXPECT_EQ(codes(q.codes), (std::vector<int>{0, 2, 11, 15}));
}

TEST(HqqQuantizerTest, NearlyConstantGroupUsesUnitScale) {
    const HqqQuantizer quantizer(4, 4);
    const at::Tensor x = at::full({1, 1, 1, 4}, 2.5f);
    const QuantizedTensor q = quantizer.quantize(x, 1);
    EXPECT_EQ(values(q.scale), (Values{1.f}));
    EXPECT_EQ(codes(q.codes), (std::vector<int>{0, 0, 0, 0}));
    EXPECT_EQ(values(quantizer.dequantize(q)), (Values{2.5f, 2.5f, 2.5f, 2.5f}));
}

TEST(HqqQuantizerTest, ComputesInFloatAndReturnsTheInputDtype) {
    const HqqQuantizer quantizer(4, 4);
    const at::Tensor x = workedTensor().to(at::kDouble);
    const QuantizedTensor q = quantizer.quantize(x, 1);
    EXPECT_EQ(q.dtype, at::kDouble);
    const at::Tensor dequantized = quantizer.dequantize(q);
    EXPECT_EQ(dequantized.scalar_type(), at::kDouble);
    EXPECT_NEAR(maxError(dequantized, x), kFourBitAxis1.maxError, 1e-6);
}

TEST(HqqQuantizerTest, RefusesUnsupportedBitsAxesAndShapes) {
    for (int nbits : {1, 2, 3, 4, 8}) {
        EXPECT_NO_THROW(HqqQuantizer(nbits, 4));
    }
    for (int nbits : {0, 5, 6, 7, 16}) {
        EXPECT_TRUE(refuses([&] { HqqQuantizer quantizer(nbits, 4); }, ErrorKind::Value,
                            {"`HQQ`", "[`1`, `2`, `3`, `4`, `8`]", "got " + std::to_string(nbits)}));
    }
    const HqqQuantizer quantizer(4, 4);
    EXPECT_NO_THROW(quantizer.checkAxis(0, "axis_key"));
    EXPECT_NO_THROW(quantizer.checkAxis(1, "axis_key"));
    for (int64_t axis : {-1, 2}) {
        EXPECT_TRUE(refuses([&] { quantizer.checkAxis(axis, "axis_key"); }, ErrorKind::Value,
                            {"`axis_key`", "[`0`, `1`]", "got " + std::to_string(axis)}));
    }
    EXPECT_TRUE(refuses(
        [&] {
            (void)quantizer.quantize(at::ones({1, 1, 2, 3}), 1);
        },
        ErrorKind::Value, {"group_size should be divisible", "6 elements", "group_size: 4"}));
    EXPECT_NO_THROW(quantizer.checkShape({1, 1, 4, 3}, 0));
}

TEST(HqqQuantizerTest, NeverTokenLocal) {
    const HqqQuantizer quantizer(4, 4);
    EXPECT_EQ(quantizer.backend(), kvscope::config::QuantizerBackend::Hqq);
    EXPECT_FALSE(quantizer.isTokenLocal(1, 8));
    EXPECT_FALSE(quantizer.isTokenLocal(0, 8));
}

} // namespace
} // namespace kvscope::cache
