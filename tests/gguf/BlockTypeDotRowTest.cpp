// SPDX-License-Identifier: GPL-3.0-or-later
// BlockType::dotRow (a packed matrix's product kernel) for every block type kvscope reads: each row's dot
// products with several inputs equal, up to the order of the sums, the dot products in double of the
// dequantised row (dequantize(), itself exact to gguf-py) with each input. The same for dotSplitRow, the integer
// kernels against activations split by SplitActivation, with inputs of values from 1e-3 to 1e2.
#include "kvscope/gguf/BlockType.h"
#include "kvscope/gguf/SplitActivation.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <gtest/gtest.h>
#include <random>
#include <string>
#include <vector>

using kvscope::gguf::BlockType;
using kvscope::gguf::KernelLevel;
using kvscope::gguf::SplitActivation;
using kvscope::gguf::SplitRow;

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

TEST(BlockTypeDotRowTest, SplitRowKernelsDotTheirDequantisedRow) {
    std::mt19937 random(20261206);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> exponent(-3.0f, 2.0f);
    const KernelLevel best = BlockType::supportedKernelLevel();
    for (int level = 0; level <= static_cast<int>(best); ++level) {
        BlockType::useKernelLevel(static_cast<KernelLevel>(level));
        std::vector<std::string> split;
        for (const BlockType* type : BlockType::all()) {
            if (!type->dotsSplitRows()) {
                EXPECT_THROW(type->dotSplitRow(nullptr, 0, nullptr, 0, nullptr), std::exception) << type->name();
                continue;
            }
            split.push_back(type->name());
            for (const size_t blocksPerRow : {size_t{1}, size_t{3}, size_t{18}}) {
                for (const size_t inputs : {size_t{1}, size_t{2}, size_t{3}, size_t{8}}) {
                    SCOPED_TRACE(std::string(type->name()) + ", " + std::to_string(blocksPerRow) + " blocks, " +
                                 std::to_string(inputs) + " inputs");
                    const size_t width = blocksPerRow * type->blockSize();
                    const size_t stride = width + 5;
                    const std::vector<uint8_t> row = randomBlocks(*type, blocksPerRow, random);
                    std::vector<float> x(inputs * stride);
                    for (float& v : x) {
                        v = normal(random) * std::pow(10.0f, exponent(random));
                    }
                    std::fill(x.begin(), x.begin() + 32, 0.0f);  // a block of zeros: its sum and halves are 0
                    std::vector<float> values(width);
                    type->dequantize(row.data(), blocksPerRow, values.data());
                    SplitActivation halves;
                    ASSERT_TRUE(halves.split(x.data(), inputs, width, stride));
                    std::vector<float> got(inputs, std::nanf(""));
                    type->dotSplitRow(row.data(), blocksPerRow, halves.rows(), inputs, got.data());
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
        // Where the processor has AVX2, the types of the real models' matrices have integer kernels.
        const std::vector<std::string> expected =
            BlockType::kernelLevel() == KernelLevel::Portable
                ? std::vector<std::string>{}
                : std::vector<std::string>{"Q4_1", "Q5_0", "Q8_0", "Q4_K", "Q6_K"};
        EXPECT_EQ(split, expected) << BlockType::kernelLevelName(BlockType::kernelLevel());
    }
    BlockType::useKernelLevel(best);
}

TEST(BlockTypeDotRowTest, SplitHalvesCarryEachValueAndRefuseWhatIsNotFinite) {
    // The AVX2 split (fused remainder) and the portable one (in double), each within t / 2 of every value.
    const KernelLevel before = BlockType::kernelLevel();
    for (const KernelLevel level : {KernelLevel::Portable, BlockType::supportedKernelLevel()}) {
        SCOPED_TRACE(BlockType::kernelLevelName(level));
        BlockType::useKernelLevel(level);
        std::vector<float> x = {3.0f, -1e-3f, 0.1f, 1.0f / 3.0f, -2.999f, 7e-8f, 0.0f, 1.5f};
        x.resize(64, 0.25f);
        SplitActivation halves;
        ASSERT_TRUE(halves.split(x.data(), 1, 64, 64));
        const SplitRow& row = halves.rows()[0];
        EXPECT_EQ(row.highScale, 3.0f / 32767.0f);
        EXPECT_EQ(row.lowScale, row.highScale / 32768.0f);
        const auto carried = [&](size_t i) {
            return static_cast<double>(row.highScale) * row.high[i] + static_cast<double>(row.lowScale) * row.low[i];
        };
        for (size_t i = 0; i < x.size(); ++i) {
            EXPECT_LE(std::fabs(carried(i) - x[i]), row.highScale / 65536.0 * 1.01) << "value " << i;
        }
        double firstSum = 0.0;
        for (size_t i = 0; i < 32; ++i) {
            firstSum += x[i];
        }
        EXPECT_FLOAT_EQ(row.blockSums[0], static_cast<float>(firstSum));
        EXPECT_FLOAT_EQ(row.blockSums[1], 8.0f);
        // The same rows again keep their split; a changed value is split anew.
        ASSERT_TRUE(halves.split(x.data(), 1, 64, 64));
        EXPECT_LE(std::fabs(carried(3) - x[3]), row.highScale / 65536.0 * 1.01);
        x[3] = -2.5f;
        ASSERT_TRUE(halves.split(x.data(), 1, 64, 64));
        EXPECT_LE(std::fabs(carried(3) + 2.5), row.highScale / 65536.0 * 1.01);
        std::vector<float> zeros(32, 0.0f);
        ASSERT_TRUE(halves.split(zeros.data(), 1, 32, 32));
        EXPECT_EQ(halves.rows()[0].high[0], 0);
        x[9] = std::nanf("");
        EXPECT_FALSE(halves.split(x.data(), 1, 64, 64));
        x[9] = INFINITY;
        EXPECT_FALSE(halves.split(x.data(), 1, 64, 64));
        x[9] = 0.5f;
        x[40] = -INFINITY;  // in the second block
        EXPECT_FALSE(halves.split(x.data(), 1, 64, 64));
        EXPECT_THROW(halves.split(x.data(), 1, 48, 48), std::exception);
    }
    BlockType::useKernelLevel(before);
}

TEST(BlockTypeDotRowTest, AWrongValueShowsThroughTheSplitKernel) {
    const BlockType* type = BlockType::find("q8_0");
    ASSERT_NE(type, nullptr);
    if (!type->dotsSplitRows()) {
        GTEST_SKIP() << "no split-row kernels on this processor";
    }
    std::vector<uint8_t> block(34, 0);
    block[1] = 0x3c; // fp16 1.0
    std::vector<float> x(32, 1.0f);
    SplitActivation halves;
    ASSERT_TRUE(halves.split(x.data(), 1, 32, 32));
    float got = -1.0f;
    type->dotSplitRow(block.data(), 1, halves.rows(), 1, &got);
    EXPECT_EQ(got, 0.0f);
    block[2] = 1;
    type->dotSplitRow(block.data(), 1, halves.rows(), 1, &got);
    EXPECT_EQ(got, 1.0f);
}

TEST(BlockTypeDotRowTest, TheAvx512SplitKernelsGiveTheAvx2KernelsBits) {
    // Every level gives the same values: VNNI's products add the same integers in the same order.
    if (BlockType::supportedKernelLevel() < KernelLevel::Avx512) {
        GTEST_SKIP() << "this processor has no AVX-512 VNNI";
    }
    std::mt19937 random(20261207);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<std::string> compared;
    for (const BlockType* type : BlockType::all()) {
        BlockType::useKernelLevel(KernelLevel::Avx2);
        if (!type->dotsSplitRows()) {
            continue;
        }
        compared.push_back(type->name());
        const size_t blocksPerRow = 9;
        const size_t width = blocksPerRow * type->blockSize();
        const size_t inputs = 3;
        const std::vector<uint8_t> row = randomBlocks(*type, blocksPerRow, random);
        std::vector<float> x(inputs * width);
        for (float& v : x) {
            v = normal(random);
        }
        SplitActivation halves;
        ASSERT_TRUE(halves.split(x.data(), inputs, width, width));
        std::vector<float> avx2(inputs);
        type->dotSplitRow(row.data(), blocksPerRow, halves.rows(), inputs, avx2.data());
        BlockType::useKernelLevel(KernelLevel::Avx512);
        std::vector<float> avx512(inputs, std::nanf(""));
        type->dotSplitRow(row.data(), blocksPerRow, halves.rows(), inputs, avx512.data());
        EXPECT_EQ(std::memcmp(avx2.data(), avx512.data(), inputs * sizeof(float)), 0) << type->name();
    }
    EXPECT_EQ(compared, (std::vector<std::string>{"Q4_1", "Q5_0", "Q8_0", "Q4_K", "Q6_K"}));
    BlockType::useKernelLevel(BlockType::supportedKernelLevel());
}
