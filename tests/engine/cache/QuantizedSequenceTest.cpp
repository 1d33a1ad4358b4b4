// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/QuantizedSequence.h"

#include "CacheTestHelpers.h"
#include "kvscope/cache/HqqQuantizer.h"
#include "kvscope/cache/MinMaxQuantizer.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <memory>

namespace kvscope::cache {
namespace {

using test::rangeStates;
using test::refuses;
using test::states;
using test::values;
using test::Values;

/// Groups of one element: quantization is exact, so positions can be followed by value.
std::shared_ptr<const Quantizer> exactQuantizerInQuantizedSequence() {
    return std::make_shared<MinMaxQuantizer>(8, 1);
}

TEST(QuantizedSequenceTest, InitializeQuantizesEverything) {
    QuantizedSequence sequence(exactQuantizerInQuantizedSequence(), 0);
    EXPECT_FALSE(sequence.hasShape());
    sequence.initialize(rangeStates(1, 3));
    EXPECT_TRUE(sequence.hasShape());
    EXPECT_EQ(sequence.quantizedTokens(), 3);
    EXPECT_EQ(sequence.residualTokens(), 0);
    EXPECT_EQ(sequence.totalTokens(), 3);
    EXPECT_EQ(values(sequence.dequantizedStore()), (Values{1, 2, 3}));
    EXPECT_EQ(sequence.residual().size(2), 0);
    EXPECT_EQ(sequence.lastFlushError().elements, 3);
    EXPECT_EQ(sequence.lastFlushError().maxAbs, 0.0);
    EXPECT_EQ(sequence.unsettledTokens(), 0u);
}

TEST(QuantizedSequenceTest, InitializeKeepsItsOwnCopy) {
    QuantizedSequence sequence(exactQuantizerInQuantizedSequence(), 0);
    at::Tensor input = rangeStates(1, 3);
    sequence.initialize(input);
    input.fill_(0);
    EXPECT_EQ(values(sequence.dequantizedStore()), (Values{1, 2, 3}));
}

TEST(QuantizedSequenceTest, AppendReturnsStorePlusResidualPlusNew) {
    QuantizedSequence sequence(exactQuantizerInQuantizedSequence(), 0);
    sequence.initialize(rangeStates(1, 3));
    EXPECT_EQ(values(sequence.append(states({4}))), (Values{1, 2, 3, 4}));
    EXPECT_EQ(values(sequence.append(states({5, 6}))), (Values{1, 2, 3, 4, 5, 6}));
    EXPECT_EQ(sequence.residualTokens(), 3);
    EXPECT_EQ(values(sequence.residual()), (Values{4, 5, 6}));
    EXPECT_EQ(values(sequence.dequantizedStore()), (Values{1, 2, 3}));
}

TEST(QuantizedSequenceTest, FlushMovesTheResidualIntoTheStore) {
    QuantizedSequence sequence(exactQuantizerInQuantizedSequence(), 0);
    sequence.initialize(rangeStates(1, 2));
    sequence.append(states({3}));
    sequence.append(states({4}));
    sequence.flush();
    EXPECT_EQ(sequence.quantizedTokens(), 4);
    EXPECT_EQ(sequence.residualTokens(), 0);
    EXPECT_EQ(sequence.lastFlushError().elements, 2); // only the newly quantized tokens are measured
    EXPECT_EQ(values(sequence.dequantizedStore()), (Values{1, 2, 3, 4}));
}

TEST(QuantizedSequenceTest, StatesReturnedBeforeAFlushKeepFullPrecisionUntilTheNextCall) {
    // Four-bit groups of four: the new token's round trip changes it.
    auto quantizer = std::make_shared<MinMaxQuantizer>(4, 4);
    QuantizedSequence sequence(quantizer, 0);
    sequence.initialize(at::tensor({0.f, 1.f, 2.f, 3.f}).view({1, 1, 1, 4}));
    ASSERT_TRUE(sequence.isTokenLocal());
    const at::Tensor token = at::tensor({0.f, 0.1f, 0.37f, 1.f}).view({1, 1, 1, 4});
    at::Tensor returned = sequence.append(token);
    sequence.flush();
    EXPECT_TRUE(at::equal(returned.narrow(2, 1, 1), token));
    const at::Tensor roundTrip = quantizer->dequantize(quantizer->quantize(token, 0));
    ASSERT_FALSE(at::equal(roundTrip, token));
    EXPECT_TRUE(at::equal(sequence.dequantizedStore().narrow(2, 1, 1), roundTrip));
}

TEST(QuantizedSequenceTest, TokenLocalityFollowsTheQuantizer) {
    QuantizedSequence local(std::make_shared<MinMaxQuantizer>(4, 4), 0);
    local.initialize(at::zeros({1, 2, 3, 8}));
    EXPECT_TRUE(local.isTokenLocal());
    QuantizedSequence spanning(std::make_shared<MinMaxQuantizer>(4, 16), 0);
    spanning.initialize(at::zeros({1, 2, 4, 8}));
    EXPECT_FALSE(spanning.isTokenLocal());
    QuantizedSequence perChannel(std::make_shared<MinMaxQuantizer>(4, 4), -1);
    perChannel.initialize(at::zeros({1, 2, 2, 8}));
    EXPECT_FALSE(perChannel.isTokenLocal());
    QuantizedSequence hqq(std::make_shared<HqqQuantizer>(4, 4), 1);
    hqq.initialize(at::zeros({1, 2, 2, 8}));
    EXPECT_FALSE(hqq.isTokenLocal());
}

TEST(QuantizedSequenceTest, CropAndRequantizeKeepsTheFirstTokensAllQuantized) {
    QuantizedSequence sequence(exactQuantizerInQuantizedSequence(), 0);
    sequence.initialize(rangeStates(1, 3));
    sequence.append(rangeStates(4, 5));
    sequence.cropAndRequantize(4);
    EXPECT_EQ(sequence.quantizedTokens(), 4);
    EXPECT_EQ(sequence.residualTokens(), 0);
    EXPECT_EQ(values(sequence.dequantizedStore()), (Values{1, 2, 3, 4}));
    sequence.cropAndRequantize(1);
    EXPECT_EQ(values(sequence.dequantizedStore()), (Values{1}));
}

TEST(QuantizedSequenceTest, MapBatchAppliesToStoreAndOptionallyResidual) {
    QuantizedSequence sequence(exactQuantizerInQuantizedSequence(), 0);
    sequence.initialize(at::tensor({1.f, 2.f, 10.f, 20.f}).view({2, 1, 2, 1}));
    sequence.append(at::tensor({3.f, 30.f}).view({2, 1, 1, 1}));
    auto swap = [](const at::Tensor& t) { return t.index_select(0, at::tensor({int64_t{1}, int64_t{0}})); };
    sequence.mapBatch(swap, /*residualToo=*/true);
    EXPECT_EQ(values(sequence.dequantizedStore()), (Values{10, 20, 1, 2}));
    EXPECT_EQ(values(sequence.residual()), (Values{30, 3}));
    sequence.mapBatch(swap, /*residualToo=*/false); // the residual stays as it is
    EXPECT_EQ(values(sequence.dequantizedStore()), (Values{1, 2, 10, 20}));
    EXPECT_EQ(values(sequence.residual()), (Values{30, 3}));
}

TEST(QuantizedSequenceTest, MapBatchRefusesABatchMismatchWithTheResidual) {
    QuantizedSequence sequence(exactQuantizerInQuantizedSequence(), 0);
    sequence.initialize(at::tensor({1.f, 2.f, 10.f, 20.f}).view({2, 1, 2, 1}));
    sequence.append(at::tensor({3.f, 30.f}).view({2, 1, 1, 1}));
    auto first = [](const at::Tensor& t) { return t.narrow(0, 0, 1); };
    EXPECT_TRUE(refuses([&] { sequence.mapBatch(first, /*residualToo=*/false); }, ErrorKind::Runtime,
                        {"batch 1", "residual batch 2"}));
}

TEST(QuantizedSequenceTest, ZeroResidualKeepsTheStore) {
    QuantizedSequence sequence(exactQuantizerInQuantizedSequence(), 0);
    sequence.initialize(rangeStates(1, 2));
    sequence.append(rangeStates(3, 4));
    sequence.zeroResidual();
    EXPECT_EQ(values(sequence.residual()), (Values{0, 0}));
    EXPECT_EQ(values(sequence.dequantizedStore()), (Values{1, 2}));
}

TEST(QuantizedSequenceTest, CheckQuantizableUsesTheSequenceAxis) {
    QuantizedSequence sequence(std::make_shared<MinMaxQuantizer>(4, 4), -1);
    EXPECT_TRUE(refuses(
        [&] {
            sequence.checkQuantizable({1, 1, 3, 8});
        },
        ErrorKind::Value, {"Group size (4) must be a divisor of (3)"}));
    EXPECT_NO_THROW(sequence.checkQuantizable({1, 1, 4, 8}));
}

TEST(QuantizedSequenceTest, ByteCounts) {
    auto quantizer = std::make_shared<MinMaxQuantizer>(4, 4);
    QuantizedSequence sequence(quantizer, 0);
    EXPECT_EQ(sequence.storeBytes(), 0);
    EXPECT_EQ(sequence.residualBytes(), 0);
    sequence.initialize(at::zeros({1, 2, 3, 8}));
    sequence.append(at::zeros({1, 2, 1, 8}));
    EXPECT_EQ(sequence.storeBytes(), quantizer->storageBytes(2 * 3 * 8));
    EXPECT_EQ(sequence.residualBytes(), 2 * 8 * static_cast<int64_t>(sizeof(float)));
}

} // namespace
} // namespace kvscope::cache
