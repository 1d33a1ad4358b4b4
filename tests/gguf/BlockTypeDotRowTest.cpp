// SPDX-License-Identifier: GPL-3.0-or-later
// BlockType::dotRow (a packed matrix's product kernel) for every block type kvscope reads: each row's dot
// products with several inputs equal, up to the order of the sums, the dot products in double of the
// dequantised row (dequantize(), itself exact to gguf-py) with each input.
#include "kvscope/gguf/BlockType.h"

#include <cmath>
#include <cstring>
#include <gtest/gtest.h>
#include <random>
#include <vector>

using kvscope::gguf::BlockType;
using kvscope::gguf::KernelLevel;

namespace {

/// `count` random blocks of `type` whose values are finite and moderate (random bytes can make fp16 scales
/// or F16/BF16 values NaN or huge: such a block is drawn again).
std::vector<uint8_t> randomBlocks(const BlockType& type, size_t count, std::mt19937& random) {
    std::vector<uint8_t> blocks(count * type.typeSize());
    std::vector<float> values(type.blockSize());
    std::uniform_int_distribution<int> byte(0, 255);
    for (size_t b = 0; b < count; ++b) {
        uint8_t* block = blocks.data() + b * type.typeSize();
        for (bool drawn = false; !drawn;) {
            for (uint32_t i = 0; i < type.typeSize(); ++i) {
                block[i] = static_cast<uint8_t>(byte(random));
            }
            type.dequantize(block, 1, values.data());
            drawn = std::all_of(values.begin(), values.end(), [](float v) { return std::isfinite(v) && std::fabs(v) < 1e4f; });
        }
    }
    return blocks;
}

} // namespace

TEST(BlockTypeDotRowTest, EveryTypeDotsItsDequantisedRow) {
    std::mt19937 random(20261203);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const KernelLevel best = BlockType::supportedKernelLevel();
    for (const BlockType* type : BlockType::all())
    for (int level = 0; level <= static_cast<int>(best); ++level) {
        // The row's values from the portable loops; the kernel of each level this processor runs dots them.
        BlockType::useKernelLevel(static_cast<KernelLevel>(level));
        for (const size_t blocksPerRow : {size_t{1}, size_t{3}, size_t{18}}) {
            // Inputs 1 to 8: the kernels take them two or four at a time, so some counts leave a few alone.
            for (const size_t inputs : {size_t{1}, size_t{2}, size_t{3}, size_t{5}, size_t{8}}) {
                SCOPED_TRACE(std::string(type->name()) + ", " + BlockType::kernelLevelName(BlockType::kernelLevel()) +
                             ", " + std::to_string(blocksPerRow) + " blocks, " + std::to_string(inputs) + " inputs");
                const size_t width = blocksPerRow * type->blockSize();
                const size_t stride = width + 7; // inputs apart by more than a row: the stride is honoured
                const std::vector<uint8_t> row = randomBlocks(*type, blocksPerRow, random);
                std::vector<float> x(inputs * stride);
                for (float& v : x) {
                    v = normal(random);
                }
                std::vector<float> values(width);
                const KernelLevel used = BlockType::kernelLevel();
                BlockType::useKernelLevel(KernelLevel::Portable);
                type->dequantize(row.data(), blocksPerRow, values.data());
                std::vector<float> widened(width);
                BlockType::useKernelLevel(used);
                type->dequantize(row.data(), blocksPerRow, widened.data());
                EXPECT_EQ(std::memcmp(values.data(), widened.data(), width * sizeof(float)), 0)
                    << "dequantize() differs from the portable loops' values";
                std::vector<float> got(inputs, std::nanf(""));
                type->dotRow(row.data(), blocksPerRow, x.data(), inputs, stride, got.data());
                for (size_t t = 0; t < inputs; ++t) {
                    double expected = 0.0;
                    double magnitude = 0.0;
                    for (size_t i = 0; i < width; ++i) {
                        expected += static_cast<double>(values[i]) * x[t * stride + i];
                        magnitude += std::fabs(static_cast<double>(values[i]) * x[t * stride + i]);
                    }
                    EXPECT_NEAR(got[t], expected, 1e-6 * magnitude + 1e-30) << "input " << t;
                }
            }
        }
    }
    BlockType::useKernelLevel(best);
}

TEST(BlockTypeDotRowTest, AWrongValueShows) {
    // The bar above is tight enough to see one code off by one: Q8_0's first value 1 instead of 0, d = 1.
    const BlockType* type = BlockType::find("q8_0");
    ASSERT_NE(type, nullptr);
    std::vector<uint8_t> block(34, 0);
    block[1] = 0x3c; // fp16 1.0
    std::vector<float> x(32, 1.0f);
    float got = 0.0f;
    type->dotRow(block.data(), 1, x.data(), 1, 32, &got);
    EXPECT_EQ(got, 0.0f);
    block[2] = 1;
    type->dotRow(block.data(), 1, x.data(), 1, 32, &got);
    EXPECT_EQ(got, 1.0f);
}
