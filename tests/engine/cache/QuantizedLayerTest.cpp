// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/QuantizedLayer.h"

#include "CacheTestHelpers.h"
#include "kvscope/cache/Cache.h"
#include "kvscope/cache/HqqQuantizer.h"
#include "kvscope/cache/MinMaxQuantizer.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <memory>
#include <random>

namespace kvscope::cache {
namespace {

using test::rangeStates;
using test::refuses;
using test::states;
using test::values;
using test::Values;

/// 8-bit min-max with groups of one element: every group is constant, so quantization is exact and
/// the residual schedule can be checked on exact values.
std::shared_ptr<const Quantizer> exactQuantizer() {
    return std::make_shared<MinMaxQuantizer>(8, 1);
}

struct ScheduleStep {
    Values input;
    MaskSizes maskBefore;
    int64_t residual;
    int64_t quantized;
    int64_t seqLength;
    bool flushed;
};

Values iota(int first, int last) {
    Values out;
    for (int v = first; v <= last; ++v) {
        out.push_back(static_cast<float>(v));
    }
    return out;
}

void runSchedule(QuantizedLayer& layer, const std::vector<ScheduleStep>& steps, Values& history) {
    for (size_t index = 0; index < steps.size(); ++index) {
        const ScheduleStep& step = steps[index];
        SCOPED_TRACE("step " + std::to_string(index));
        EXPECT_EQ(layer.maskSizes(static_cast<int64_t>(step.input.size())), step.maskBefore);
        KeyValueStates out = layer.update(states(step.input), -states(step.input));
        history.insert(history.end(), step.input.begin(), step.input.end());
        EXPECT_EQ(values(out.keys), history);
        EXPECT_EQ(values(out.values), test::negated(history));
        EXPECT_EQ(layer.residualTokens(), step.residual);
        EXPECT_EQ(layer.quantizedTokens(), step.quantized);
        EXPECT_EQ(layer.seqLength(), step.seqLength);
        EXPECT_EQ(layer.storedTokens(), step.residual + step.quantized);
        EXPECT_EQ(layer.lastFlush().has_value(), step.flushed);
        if (step.residual == 0) {
            EXPECT_EQ(layer.keys().dim(), 1); // the reference's empty 1-D residual
            EXPECT_EQ(layer.keys().numel(), 0);
        } else {
            const Values residual(history.end() - step.residual, history.end());
            EXPECT_EQ(layer.keys().dim(), 4);
            EXPECT_EQ(values(layer.keys()), residual);
            EXPECT_EQ(values(layer.values()), test::negated(residual));
        }
        const Values store(history.begin(), history.begin() + step.quantized);
        EXPECT_EQ(values(layer.dequantizedStore().keys), store);
    }
}

TEST(QuantizedLayerTest, DescribesItself) {
    QuantizedLayer minMax(exactQuantizer(), 0, -1, 4);
    EXPECT_EQ(minMax.typeName(), "MinMaxQuantizedLayer");
    EXPECT_FALSE(minMax.isCompileable());
    EXPECT_FALSE(minMax.isSliding());
    EXPECT_EQ(minMax.maxCacheShape(), -1);
    EXPECT_EQ(minMax.residualLength(), 4);
    EXPECT_EQ(minMax.axisKey(), 0);
    EXPECT_EQ(minMax.axisValue(), -1);
    EXPECT_FALSE(minMax.isInitialized());
    EXPECT_EQ(minMax.seqLength(), 0);
    EXPECT_FALSE(minMax.keys().defined());
    QuantizedLayer hqq(std::make_shared<HqqQuantizer>(4, 4), 1, 1, 4);
    EXPECT_EQ(hqq.typeName(), "HQQQuantizedLayer");
    EXPECT_EQ(hqq.quantizer().backend(), kvscope::config::QuantizerBackend::Hqq);
}

TEST(QuantizedLayerTest, ResidualScheduleWithResidualLengthFour) { // hf-cache.md 1.3.8
    QuantizedLayer layer(exactQuantizer(), 0, 0, 4);
    Values history;
    runSchedule(layer,
                {
                    {{1, 2, 3}, {3, 0}, 0, 3, 3, true}, // the whole prefill is quantized at once
                    {{4}, {4, 0}, 1, 3, 4, false},
                    {{5}, {5, 0}, 2, 3, 5, false},
                    {{6}, {6, 0}, 3, 3, 6, false},
                    {{7}, {7, 0}, 0, 7, 7, true}, // residual held R - 1: flush, re-quantize all 7
                    {{8}, {8, 0}, 1, 7, 8, false},
                    {{9}, {9, 0}, 2, 7, 9, false},
                    {{10}, {10, 0}, 3, 7, 10, false},
                    {{11}, {11, 0}, 0, 11, 11, true},
                    {{12, 13}, {13, 0}, 2, 11, 13, false}, // after a flush: appended whole
                    {{14}, {14, 0}, 3, 11, 14, false},
                    {{15}, {15, 0}, 0, 15, 15, true},
                    {iota(16, 20), {20, 0}, 5, 15, 20, false}, // the residual may exceed R
                    {{21}, {21, 0}, 0, 21, 21, true},
                },
                history);
    ASSERT_TRUE(layer.lastFlush().has_value());
    EXPECT_EQ(layer.lastFlush()->tokensMoved, 6);
    EXPECT_EQ(layer.lastFlush()->quantizedTokensAfter, 21);
    EXPECT_EQ(layer.lastFlush()->maxAbsError, 0.0);
}

TEST(QuantizedLayerTest, FlushReportsCountTheMovedTokens) {
    QuantizedLayer layer(exactQuantizer(), 0, 0, 4);
    layer.update(rangeStates(1, 3), rangeStates(1, 3));
    ASSERT_TRUE(layer.lastFlush().has_value());
    EXPECT_EQ(layer.lastFlush()->tokensMoved, 3);
    EXPECT_EQ(layer.lastFlush()->quantizedTokensAfter, 3);
    for (int token = 4; token <= 6; ++token) {
        layer.update(states({static_cast<float>(token)}), states({static_cast<float>(token)}));
    }
    layer.update(states({7}), states({7}));
    ASSERT_TRUE(layer.lastFlush().has_value());
    EXPECT_EQ(layer.lastFlush()->tokensMoved, 4);
    EXPECT_EQ(layer.lastFlush()->quantizedTokensAfter, 7);
}

TEST(QuantizedLayerTest, EightBitValuesStayClose) {
    QuantizedLayer layer(std::make_shared<MinMaxQuantizer>(8, 4), 0, 0, 4);
    std::mt19937 random(7);
    std::uniform_real_distribution<float> uniform(0.f, 1.f);
    auto randomStates = [&](int tokens) {
        Values v(static_cast<size_t>(tokens * 4));
        for (float& x : v) {
            x = uniform(random);
        }
        return at::tensor(v).view({1, 1, tokens, 4});
    };
    at::Tensor all = randomStates(5);
    KeyValueStates first = layer.update(all, all);
    EXPECT_TRUE(at::equal(first.keys, all)); // the prefill is returned unquantized
    ASSERT_TRUE(layer.lastFlush().has_value());
    EXPECT_GT(layer.lastFlush()->maxAbsError, 0.0);
    EXPECT_LE(layer.lastFlush()->maxAbsError, 0.5 / 255 + 1e-6); // half a step of a range <= 1
    EXPECT_LT(layer.lastFlush()->relativeError, 0.01);
    for (int step = 0; step < 12; ++step) {
        at::Tensor token = randomStates(1);
        KeyValueStates out = layer.update(token, token);
        all = at::cat({all, token}, 2);
        ASSERT_EQ(out.keys.sizes(), all.sizes());
        EXPECT_LE((out.keys - all).abs().max().item<float>(), 0.5f / 255 + 1e-6f);
        // The newest token is returned in full precision.
        EXPECT_TRUE(at::equal(out.keys.narrow(2, out.keys.size(2) - 1, 1), token));
    }
}

TEST(QuantizedLayerTest, CropRequantizesTheKeptTokens) { // seed-specific crop, hf-cache.md 1.3.8
    for (int64_t maxLength : {4, -1}) {
        SCOPED_TRACE("crop(" + std::to_string(maxLength) + ")");
        QuantizedLayer layer(exactQuantizer(), 0, 0, 4);
        layer.update(rangeStates(1, 3), -rangeStates(1, 3));
        layer.update(states({4}), states({-4}));
        layer.update(states({5}), states({-5}));
        ASSERT_EQ(layer.residualTokens(), 2);
        layer.crop(maxLength);
        EXPECT_EQ(layer.quantizedTokens(), 4);
        EXPECT_EQ(layer.residualTokens(), 0);
        EXPECT_EQ(layer.seqLength(), 4);
        EXPECT_EQ(layer.keys().dim(), 1);
        EXPECT_EQ(values(layer.dequantizedStore().keys), (Values{1, 2, 3, 4}));
        EXPECT_EQ(values(layer.dequantizedStore().values), (Values{-1, -2, -3, -4}));
        KeyValueStates out = layer.update(states({9}), states({-9}));
        EXPECT_EQ(values(out.keys), (Values{1, 2, 3, 4, 9}));
        EXPECT_EQ(values(layer.keys()), (Values{9}));
    }
}

TEST(QuantizedLayerTest, CropInsideTheQuantizedStore) {
    QuantizedLayer layer(exactQuantizer(), 0, 0, 4);
    layer.update(rangeStates(1, 3), -rangeStates(1, 3));
    layer.update(states({4}), states({-4}));
    layer.crop(2);
    EXPECT_EQ(values(layer.dequantizedStore().keys), (Values{1, 2}));
    EXPECT_EQ(layer.seqLength(), 2);
    layer.crop(5); // longer than held: nothing to do
    EXPECT_EQ(layer.seqLength(), 2);
}

TEST(QuantizedLayerTest, CropBeforeAnyUpdate) {
    QuantizedLayer layer(exactQuantizer(), 0, 0, 4);
    layer.crop(3); // nothing held: returns early as the reference does
    EXPECT_TRUE(refuses([&] { layer.crop(-1); }, ErrorKind::Type, {"MinMaxQuantizedLayer"}));
}

TEST(QuantizedLayerTest, ResetZeroesTheResidualAndKeepsTheStore) {
    // As in the reference: the quantized store survives a reset and is returned by the next update.
    QuantizedLayer layer(exactQuantizer(), 0, 0, 4);
    layer.update(rangeStates(1, 3), -rangeStates(1, 3));
    layer.update(states({4}), states({-4}));
    layer.update(states({5}), states({-5}));
    layer.reset();
    EXPECT_EQ(layer.seqLength(), 0);
    EXPECT_EQ(layer.maskSizes(1), (MaskSizes{1, 0}));
    EXPECT_EQ(values(layer.keys()), (Values{0, 0}));
    KeyValueStates out = layer.update(states({9}), states({-9}));
    EXPECT_EQ(values(out.keys), (Values{1, 2, 3, 0, 0, 9}));
    EXPECT_EQ(layer.seqLength(), 1);
}

/// Two batch rows: b0 = [1, 2] then 3, b1 = [10, 20] then 30: store [1, 2] / [10, 20], residual [3] / [30].
QuantizedLayer twoRowLayer() {
    QuantizedLayer layer(exactQuantizer(), 0, 0, 4);
    at::Tensor prefill = at::tensor({1.f, 2.f, 10.f, 20.f}).view({2, 1, 2, 1});
    at::Tensor next = at::tensor({3.f, 30.f}).view({2, 1, 1, 1});
    layer.update(prefill, -prefill);
    layer.update(next, -next);
    return layer;
}

TEST(QuantizedLayerTest, ReorderAppliesToStoreAndResidual) {
    QuantizedLayer layer = twoRowLayer();
    layer.reorder(at::tensor({int64_t{1}, int64_t{0}}));
    EXPECT_EQ(values(layer.dequantizedStore().keys), (Values{10, 20, 1, 2}));
    EXPECT_EQ(values(layer.keys()), (Values{30, 3}));
    at::Tensor next = at::tensor({40.f, 4.f}).view({2, 1, 1, 1});
    KeyValueStates out = layer.update(next, -next);
    EXPECT_EQ(values(out.keys), (Values{10, 20, 30, 40, 1, 2, 3, 4}));
    EXPECT_EQ(values(out.values), (Values{-10, -20, -30, -40, -1, -2, -3, -4}));
}

TEST(QuantizedLayerTest, BatchSelectAndRepeat) {
    QuantizedLayer layer = twoRowLayer();
    layer.batchSelectIndices(at::tensor({int64_t{1}}));
    EXPECT_EQ(values(layer.dequantizedStore().keys), (Values{10, 20}));
    EXPECT_EQ(values(layer.keys()), (Values{30}));
    layer.batchRepeatInterleave(2);
    EXPECT_EQ(values(layer.dequantizedStore().keys), (Values{10, 20, 10, 20}));
    EXPECT_EQ(values(layer.keys()), (Values{30, 30}));
    EXPECT_EQ(layer.seqLength(), 3);
}

TEST(QuantizedLayerTest, ReorderRightAfterAFlushIsRefusedLikeTheReference) {
    // The residual is the empty 1-D tensor: `index_select(0, [1, 0])` is "index out of range in self".
    QuantizedLayer layer(exactQuantizer(), 0, 0, 2);
    at::Tensor prefill = at::tensor({1.f, 2.f, 10.f, 20.f}).view({2, 1, 2, 1});
    layer.update(prefill, prefill);
    layer.update(at::tensor({3.f, 30.f}).view({2, 1, 1, 1}), at::tensor({3.f, 30.f}).view({2, 1, 1, 1}));
    layer.update(at::tensor({4.f, 40.f}).view({2, 1, 1, 1}), at::tensor({4.f, 40.f}).view({2, 1, 1, 1}));
    ASSERT_EQ(layer.residualTokens(), 0);
    EXPECT_TRUE(refuses(
        [&] {
            layer.reorder(at::tensor({int64_t{1}, int64_t{0}}));
        },
        ErrorKind::Index, {"index out of range"}));
    EXPECT_EQ(values(layer.dequantizedStore().keys), (Values{1, 2, 3, 4, 10, 20, 30, 40}));
}

TEST(QuantizedLayerTest, RefusesBadAxesAndResidualLength) {
    EXPECT_TRUE(refuses([] { QuantizedLayer layer(exactQuantizer(), 1, 0, 4); }, ErrorKind::Value,
                        {"`axis_key`", "got 1"}));
    EXPECT_TRUE(refuses([] { QuantizedLayer layer(exactQuantizer(), 0, 2, 4); }, ErrorKind::Value,
                        {"`axis_value`", "got 2"}));
    EXPECT_TRUE(refuses([] { QuantizedLayer layer(std::make_shared<HqqQuantizer>(4, 4), -1, 1, 4); },
                        ErrorKind::Value, {"`axis_key`", "`HQQ`", "got -1"}));
    EXPECT_TRUE(refuses([] { QuantizedLayer layer(exactQuantizer(), 0, 0, 0); }, ErrorKind::Value,
                        {"residual_length", "got 0"}));
    EXPECT_NO_THROW(QuantizedLayer(exactQuantizer(), 0, 0, 1));
}

TEST(QuantizedLayerTest, GroupDivisibilityIsCheckedBeforeAnythingChanges) {
    // Per channel over 4 consecutive rows: every quantization needs batch * heads * tokens % 4 == 0.
    // Residual length 2: the update after the first residual token flushes.
    QuantizedLayer layer(std::make_shared<MinMaxQuantizer>(4, 4), -1, -1, 2);
    EXPECT_TRUE(refuses([&] { layer.update(rangeStates(1, 3), rangeStates(1, 3)); }, ErrorKind::Value,
                        {"Group size (4) must be a divisor of (3)"}));
    EXPECT_EQ(layer.seqLength(), 0);
    layer.update(rangeStates(1, 4), rangeStates(1, 4));
    layer.update(states({5}), states({5}));
    // The next update flushes 6 tokens: refused, nothing moves.
    EXPECT_TRUE(refuses([&] { layer.update(states({6}), states({6})); }, ErrorKind::Value,
                        {"Group size (4) must be a divisor of (6)"}));
    EXPECT_EQ(layer.seqLength(), 5);
    EXPECT_EQ(layer.residualTokens(), 1);
    EXPECT_EQ(values(layer.keys()), (Values{5}));
    // Three tokens make the flush 8 tokens long, which groups.
    KeyValueStates out = layer.update(rangeStates(6, 8), rangeStates(6, 8));
    EXPECT_EQ(out.keys.size(2), 8);
    EXPECT_EQ(layer.quantizedTokens(), 8);
    EXPECT_EQ(layer.seqLength(), 8);
}

TEST(QuantizedLayerTest, MismatchedStatesAreRefused) {
    QuantizedLayer layer(exactQuantizer(), 0, 0, 4);
    layer.update(rangeStates(1, 2), rangeStates(1, 2));
    EXPECT_TRUE(refuses(
        [&] {
            layer.update(at::ones({1, 2, 1, 1}), at::ones({1, 2, 1, 1}));
        },
        ErrorKind::Runtime, {"Sizes of tensors must match"}));
    EXPECT_TRUE(refuses([&] { layer.update(states({1}), states({1, 2})); }, ErrorKind::Value, {"1 and 2"}));
    EXPECT_EQ(layer.seqLength(), 2);
}

TEST(QuantizedLayerTest, StoredBytesCountPackedStoreAndResidual) {
    QuantizedLayer layer(exactQuantizer(), 0, 0, 4);
    layer.update(rangeStates(1, 3), rangeStates(1, 3));
    layer.update(states({4}), states({4}));
    layer.update(states({5}), states({5}));
    EXPECT_EQ(layer.quantizedBytes(), 2 * MinMaxQuantizer(8, 1).storageBytes(3));
    EXPECT_EQ(layer.residualBytes(), 2 * 2 * static_cast<int64_t>(sizeof(float)));
    EXPECT_EQ(layer.storedBytes(), layer.quantizedBytes() + layer.residualBytes());
}

TEST(QuantizedLayerTest, UpdateAfterEarlyInitializationQuantizesThePrefill) {
    // Divergence kept on purpose here: the reference raises AttributeError (`_quantized_keys` is never
    // set because lazy initialisation already marked the layer initialised); the engine treats the first
    // update as the prefill.
    std::vector<std::unique_ptr<CacheLayer>> layers;
    layers.push_back(std::make_unique<QuantizedLayer>(exactQuantizer(), 0, 0, 4));
    Cache cache(std::move(layers));
    cache.earlyInitialization(1, 1, 1, at::kFloat, at::kCPU);
    auto& layer = dynamic_cast<QuantizedLayer&>(cache.layer(0));
    EXPECT_TRUE(layer.isInitialized());
    EXPECT_EQ(layer.seqLength(), 0);
    KeyValueStates out = cache.update(rangeStates(1, 2), rangeStates(1, 2), 0);
    EXPECT_EQ(values(out.keys), (Values{1, 2}));
    EXPECT_EQ(layer.quantizedTokens(), 2);
}

// ---------------------------------------------------------------------------------------------------
// Property test: the engine (which re-quantizes only what may still change) returns, bit for bit, what
// the reference's QuantizedLayer returns. The naive layer below is the reference's update, crop and
// reorder_cache written out with the same quantizer objects: it dequantizes the store and re-quantizes
// the whole history at every flush.

class NaiveQuantizedLayer {
public:
    NaiveQuantizedLayer(std::shared_ptr<const Quantizer> quantizer, int64_t axisKey, int64_t axisValue,
                        int64_t residualLength)
        : m_quantizer(std::move(quantizer)), m_axisKey(axisKey), m_axisValue(axisValue),
          m_residualLength(residualLength) {}

    KeyValueStates update(const at::Tensor& keyStates, const at::Tensor& valueStates) {
        m_cumulative += keyStates.size(2);
        if (!m_initialized) {
            m_initialized = true;
            m_quantizedKeys = m_quantizer->quantize(keyStates.contiguous(), m_axisKey);
            m_quantizedValues = m_quantizer->quantize(valueStates.contiguous(), m_axisValue);
            return {keyStates, valueStates};
        }
        at::Tensor dequantKeys = m_quantizer->dequantize(m_quantizedKeys);
        at::Tensor dequantValues = m_quantizer->dequantize(m_quantizedValues);
        at::Tensor keysToReturn = m_residualKeys.defined()
                                      ? at::cat({dequantKeys, m_residualKeys, keyStates}, 2)
                                      : at::cat({dequantKeys, keyStates}, 2);
        at::Tensor valuesToReturn = m_residualValues.defined()
                                        ? at::cat({dequantValues, m_residualValues, valueStates}, 2)
                                        : at::cat({dequantValues, valueStates}, 2);
        if (m_residualKeys.defined() && m_residualKeys.size(2) + 1 >= m_residualLength) {
            m_quantizedKeys = m_quantizer->quantize(keysToReturn.contiguous(), m_axisKey);
            m_quantizedValues = m_quantizer->quantize(valuesToReturn.contiguous(), m_axisValue);
            m_residualKeys = at::Tensor(); // the empty 1-D tensor
            m_residualValues = at::Tensor();
        } else {
            m_residualKeys =
                m_residualKeys.defined() ? at::cat({m_residualKeys, keyStates}, 2) : keyStates.clone();
            m_residualValues = m_residualValues.defined() ? at::cat({m_residualValues, valueStates}, 2)
                                                          : valueStates.clone();
        }
        return {keysToReturn, valuesToReturn};
    }

    void crop(int64_t maxLength) { // the seed's QuantizedLayer.crop, non-negative lengths
        if (m_cumulative <= maxLength) {
            return;
        }
        at::Tensor keys = m_quantizer->dequantize(m_quantizedKeys);
        at::Tensor vals = m_quantizer->dequantize(m_quantizedValues);
        if (m_residualKeys.defined()) {
            keys = at::cat({keys, m_residualKeys}, 2);
            vals = at::cat({vals, m_residualValues}, 2);
        }
        m_quantizedKeys = m_quantizer->quantize(keys.narrow(2, 0, maxLength).contiguous(), m_axisKey);
        m_quantizedValues = m_quantizer->quantize(vals.narrow(2, 0, maxLength).contiguous(), m_axisValue);
        m_residualKeys = at::Tensor();
        m_residualValues = at::Tensor();
        m_cumulative = maxLength;
    }

    void reorder(const at::Tensor& beamIdx) { // needs a 4-D residual, as the reference does
        m_residualKeys = m_residualKeys.index_select(0, beamIdx);
        m_residualValues = m_residualValues.index_select(0, beamIdx);
        m_quantizedKeys = m_quantizer->quantize(
            m_quantizer->dequantize(m_quantizedKeys).index_select(0, beamIdx).contiguous(), m_axisKey);
        m_quantizedValues = m_quantizer->quantize(
            m_quantizer->dequantize(m_quantizedValues).index_select(0, beamIdx).contiguous(), m_axisValue);
    }

    bool residualIsShaped() const { return m_residualKeys.defined(); }
    at::Tensor residualKeys() const { return m_residualKeys; }
    at::Tensor dequantizedKeys() const { return m_quantizer->dequantize(m_quantizedKeys); }
    at::Tensor dequantizedValues() const { return m_quantizer->dequantize(m_quantizedValues); }
    int64_t cumulative() const { return m_cumulative; }

private:
    std::shared_ptr<const Quantizer> m_quantizer;
    int64_t m_axisKey;
    int64_t m_axisValue;
    int64_t m_residualLength;
    bool m_initialized = false;
    int64_t m_cumulative = 0;
    QuantizedTensor m_quantizedKeys;
    QuantizedTensor m_quantizedValues;
    at::Tensor m_residualKeys;
    at::Tensor m_residualValues;
};

struct PropertyCase {
    const char* name;
    std::shared_ptr<const Quantizer> quantizer;
    int64_t axisKey;
    int64_t axisValue;
    bool tokenLocal;
    std::vector<int> updateSizes; ///< after a prefill of 6 tokens
};

void checkAgainstNaive(const PropertyCase& c, unsigned seed) {
    SCOPED_TRACE(c.name);
    constexpr int64_t kBatch = 2, kHeads = 2, kHeadDim = 8, kResidual = 4;
    QuantizedLayer layer(c.quantizer, c.axisKey, c.axisValue, kResidual);
    NaiveQuantizedLayer naive(c.quantizer, c.axisKey, c.axisValue, kResidual);
    std::mt19937 random(seed);
    std::normal_distribution<float> normal(0.f, 1.f);
    auto randomStates = [&](int64_t tokens) {
        Values v(static_cast<size_t>(kBatch * kHeads * tokens * kHeadDim));
        for (float& x : v) {
            x = normal(random);
        }
        return at::tensor(v).view({kBatch, kHeads, tokens, kHeadDim});
    };
    auto step = [&](int64_t tokens, const std::string& label) {
        at::Tensor keys = randomStates(tokens);
        at::Tensor vals = randomStates(tokens);
        KeyValueStates expected = naive.update(keys, vals);
        KeyValueStates actual = layer.update(keys, vals);
        ASSERT_TRUE(at::equal(actual.keys, expected.keys))
            << label << ": keys differ, max |diff| "
            << (actual.keys - expected.keys).abs().max().item<float>();
        ASSERT_TRUE(at::equal(actual.values, expected.values)) << label << ": values differ";
        ASSERT_EQ(layer.seqLength(), naive.cumulative()) << label;
        ASSERT_EQ(layer.residualTokens() > 0, naive.residualIsShaped()) << label;
    };
    step(6, "prefill");
    EXPECT_EQ(layer.keySequence().isTokenLocal(), c.tokenLocal);
    bool cropped = false;
    bool reordered = false;
    for (size_t i = 0; i < c.updateSizes.size(); ++i) {
        const std::string label = "update " + std::to_string(i + 1);
        step(c.updateSizes[i], label);
        if (::testing::Test::HasFatalFailure()) {
            return;
        }
        if (!cropped && i + 1 >= 20) {
            // Crop to 18 tokens (a multiple of 2, so that axis -1 groups of 4 rows still fit 2 x 2 x 18).
            cropped = true;
            layer.crop(18);
            naive.crop(18);
            ASSERT_TRUE(at::equal(layer.dequantizedStore().keys, naive.dequantizedKeys())) << "after crop";
        }
        if (!reordered && i + 1 >= 30 && naive.residualIsShaped()) {
            reordered = true;
            const at::Tensor beams = at::tensor({int64_t{1}, int64_t{1}});
            layer.reorder(beams);
            naive.reorder(beams);
            ASSERT_TRUE(at::equal(layer.dequantizedStore().keys, naive.dequantizedKeys())) << "after reorder";
            ASSERT_TRUE(at::equal(layer.keys(), naive.residualKeys())) << "after reorder";
        }
    }
    EXPECT_TRUE(cropped);
    EXPECT_TRUE(reordered);
    EXPECT_TRUE(at::equal(layer.dequantizedStore().keys, naive.dequantizedKeys()));
    EXPECT_TRUE(at::equal(layer.dequantizedStore().values, naive.dequantizedValues()));
}

const std::vector<int> kFortySingleTokens(40, 1);

TEST(QuantizedLayerPropertyTest, MinMaxAxis0TokenLocalMatchesTheReferenceBitForBit) {
    for (unsigned seed : {1u, 2u, 3u}) {
        checkAgainstNaive({"min-max 4-bit axis 0, groups of 4 inside head_dim 8",
                           std::make_shared<MinMaxQuantizer>(4, 4), 0, 0, true, kFortySingleTokens},
                          seed);
    }
}

TEST(QuantizedLayerPropertyTest, MinMaxAxis0TwoBitsWithMixedUpdateSizes) {
    checkAgainstNaive({"min-max 2-bit axis 0, groups of 8, mixed sizes",
                       std::make_shared<MinMaxQuantizer>(2, 8),
                       0,
                       0,
                       true,
                       {1, 1, 1, 3, 1, 1, 1, 1, 5, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                        7, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
                      4);
}

TEST(QuantizedLayerPropertyTest, MinMaxAxisMinus1FullPathMatchesTheReferenceBitForBit) {
    for (unsigned seed : {1u, 2u, 3u}) {
        checkAgainstNaive({"min-max 4-bit axis -1, groups of 4 rows", std::make_shared<MinMaxQuantizer>(4, 4),
                           -1, -1, false, kFortySingleTokens},
                          seed);
    }
}

TEST(QuantizedLayerPropertyTest, HqqAxis1MatchesTheReferenceBitForBit) {
    for (unsigned seed : {1u, 2u}) {
        checkAgainstNaive(
            {"hqq 4-bit axis 1", std::make_shared<HqqQuantizer>(4, 4), 1, 1, false, kFortySingleTokens},
            seed);
    }
}

TEST(QuantizedLayerPropertyTest, HqqAxis0MatchesTheReferenceBitForBit) {
    checkAgainstNaive({"hqq 2-bit axis 0 (strided groups)", std::make_shared<HqqQuantizer>(2, 4), 0, 0, false,
                       kFortySingleTokens},
                      5);
}

} // namespace
} // namespace kvscope::cache
