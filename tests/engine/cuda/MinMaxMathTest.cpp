// SPDX-License-Identifier: GPL-3.0-or-later
// The fused kernels' arithmetic (MinMaxMath.h), run on the host: checked against LibTorch performing the
// operations that MinMaxQuantizer's LibTorch path performs on CUDA, so that the kernels' algorithm is
// proven on machines without a GPU (the kernels themselves are compared on CUDA in MinMaxQuantizerTest).
#include "kvscope/cuda/MinMaxMath.h"

#include <ATen/ATen.h>
#include <cstdint>
#include <gtest/gtest.h>
#include <limits>
#include <vector>

namespace kvscope::cuda {
namespace {

/// quanto's grouping (reference_quantizer.py `group`), as MinMaxQuantizer::quantize writes it.
at::Tensor grouped(const at::Tensor& tensor, bool perChannel, int64_t groupSize) {
    if (!perChannel) {
        return tensor.reshape({-1, groupSize});
    }
    const int64_t channels = tensor.size(-1);
    const int64_t tokenGroups = tensor.numel() / channels / groupSize;
    return tensor.reshape({tokenGroups, groupSize, channels})
        .permute({1, 2, 0})
        .reshape({groupSize, channels * tokenGroups});
}

/// MinMaxQuantizer's LibTorch operations, with the division by the level count done as LibTorch's
/// CUDA kernel does it (a multiply by the float reciprocal).
struct Reference {
    at::Tensor codes;
    at::Tensor scale;
    at::Tensor lo;
    at::Tensor dequantized; // grouped layout
};
Reference reference(const at::Tensor& tensor, bool perChannel, int64_t groupSize, int nbits) {
    const at::Tensor g = grouped(tensor, perChannel, groupSize);
    const int64_t reduce = perChannel ? 0 : 1;
    const int64_t levels = (int64_t{1} << nbits) - 1;
    Reference r;
    r.lo = g.amin(reduce, true);
    const at::Tensor hi = g.amax(reduce, true);
    r.scale = ((hi - r.lo) * (1.0f / static_cast<float>(levels))).clamp_min(1e-8);
    r.codes = at::clamp(at::round((g - r.lo) / r.scale), 0, levels).to(at::kByte);
    r.dequantized = r.codes.to(at::kFloat) * r.scale + r.lo;
    return r;
}

at::Tensor input(const std::vector<int64_t>& shape, uint64_t seed) {
    auto generator = at::make_generator<at::CPUGeneratorImpl>(seed);
    at::Tensor values = at::randn(shape, generator, at::TensorOptions().dtype(at::kFloat)).mul_(3.0);
    values.view({-1}).narrow(0, 0, 32).fill_(-1.5f); // a constant run: scale 1e-8
    return values;
}

struct Case {
    std::vector<int64_t> shape;
    bool perChannel;
    int64_t groupSize;
};

const std::vector<Case> kCases = {{{1, 8, 9, 64}, false, 64},
                                  {{2, 4, 3, 64}, false, 32},
                                  {{1, 8, 32, 64}, true, 16},
                                  {{2, 2, 64, 16}, true, 64}};

TEST(MinMaxMathTest, LayoutOffsetsFollowQuantoGrouping) {
    for (const Case& c : kCases) {
        const at::Tensor positions =
            at::arange(c.shape[0] * c.shape[1] * c.shape[2] * c.shape[3], at::kLong).view(c.shape);
        const at::Tensor expected = grouped(positions, c.perChannel, c.groupSize).contiguous();
        const GroupLayout layout =
            GroupLayout::of(positions.numel(), c.shape.back(), c.perChannel, c.groupSize);
        ASSERT_EQ(layout.elements(), positions.numel());
        const int64_t* flat = expected.data_ptr<int64_t>();
        for (int64_t index = 0; index < layout.elements(); ++index) {
            const int64_t group = layout.groupOfGroupedIndex(index);
            const int64_t element = layout.elementOfGroupedIndex(index);
            ASSERT_EQ(layout.offset(group, element), flat[index]) << "grouped index " << index;
            ASSERT_EQ(layout.offset(group, element), layout.offset(group, 0) + element * layout.stride());
        }
    }
}

TEST(MinMaxMathTest, GroupArithmeticEqualsLibTorchOperationsBitForBit) {
    uint64_t seed = 1;
    for (const Case& c : kCases) {
        for (int nbits : {2, 4, 8}) {
            const at::Tensor x = input(c.shape, seed++);
            const Reference r = reference(x, c.perChannel, c.groupSize, nbits);
            const GroupLayout layout = GroupLayout::of(x.numel(), c.shape.back(), c.perChannel, c.groupSize);
            const float* values = x.data_ptr<float>();
            const auto levels = static_cast<float>((1 << nbits) - 1);
            const at::Tensor codes = r.codes.contiguous();
            const at::Tensor dequantized = r.dequantized.contiguous();
            for (int64_t group = 0; group < layout.groups; ++group) {
                // The kernels' reduction: min and max from element 0 onwards, NaN-propagating.
                float lo = values[layout.offset(group, 0)];
                float hi = lo;
                for (int64_t i = 0; i < layout.groupSize; ++i) {
                    lo = math::minimum(lo, values[layout.offset(group, i)]);
                    hi = math::maximum(hi, values[layout.offset(group, i)]);
                }
                const float scale = math::scale(lo, hi, math::inverseLevels(nbits));
                ASSERT_EQ(lo, r.lo.view({-1})[group].item<float>());
                ASSERT_EQ(scale, r.scale.view({-1})[group].item<float>())
                    << "group " << group << " nbits " << nbits;
                for (int64_t i = 0; i < layout.groupSize; ++i) {
                    const int64_t index =
                        c.perChannel ? i * layout.groups + group : group * layout.groupSize + i;
                    const uint8_t code = math::code(values[layout.offset(group, i)], lo, scale, levels);
                    ASSERT_EQ(code, codes.data_ptr<uint8_t>()[index]) << "grouped index " << index;
                    ASSERT_EQ(math::dequantized(code, scale, lo), dequantized.data_ptr<float>()[index]);
                }
            }
        }
    }
}

TEST(MinMaxMathTest, RoundsHalfToEvenAndClampsLikeLibTorch) {
    EXPECT_EQ(math::roundHalfEven(2.5f), 2.0f);
    EXPECT_EQ(math::roundHalfEven(3.5f), 4.0f);
    EXPECT_EQ(math::roundHalfEven(-0.5f), -0.0f);
    // (x - lo) / scale rounds to the level count at the top and clamps anything beyond it.
    EXPECT_EQ(math::code(1.0f, 0.0f, 1.0f / 15.0f, 15.0f), 15);
    EXPECT_EQ(math::code(2.0f, 0.0f, 1.0f / 15.0f, 15.0f), 15);
    EXPECT_EQ(math::code(-1.0f, 0.0f, 1.0f / 15.0f, 15.0f), 0);
    EXPECT_EQ(math::scale(0.25f, 0.25f, math::inverseLevels(4)), static_cast<float>(1e-8));
    const float nan = std::numeric_limits<float>::quiet_NaN();
    EXPECT_TRUE(math::isNan(math::minimum(1.0f, nan)));
    EXPECT_TRUE(math::isNan(math::maximum(nan, 1.0f)));
    EXPECT_TRUE(math::isNan(math::clamp(nan, 0.0f, 15.0f)));
}

TEST(MinMaxMathTest, PackedCodesUnpackInGroupedOrder) {
    for (int bits : {2, 4, 8}) {
        const int perByte = math::codesPerByte(bits);
        std::vector<uint8_t> codes(37);
        for (size_t i = 0; i < codes.size(); ++i) {
            codes[i] = static_cast<uint8_t>((i * 7 + 3) % (1u << bits));
        }
        // Packing as the encode kernel does it: the first code of a byte in its lowest bits.
        std::vector<uint8_t> packed(
            static_cast<size_t>(math::packedBytes(static_cast<int64_t>(codes.size()), bits)), 0);
        for (size_t i = 0; i < codes.size(); ++i) {
            packed[i / static_cast<size_t>(perByte)] |=
                static_cast<uint8_t>(codes[i] << ((i % perByte) * bits));
        }
        EXPECT_EQ(packed.size(), (codes.size() * static_cast<size_t>(bits) + 7) / 8);
        for (size_t i = 0; i < codes.size(); ++i) {
            ASSERT_EQ(math::unpack(packed.data(), static_cast<int64_t>(i), bits), codes[i])
                << bits << " bits, code " << i;
        }
    }
    EXPECT_EQ(math::unpack(std::vector<uint8_t>{0xB4}.data(), 1, 4), 0xB);
    EXPECT_EQ(math::unpack(std::vector<uint8_t>{0xB4}.data(), 2, 2), 0x3);
}

} // namespace
} // namespace kvscope::cuda
