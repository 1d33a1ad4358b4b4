// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/QuantizedCache.h"

#include "CacheTestHelpers.h"
#include "kvscope/cache/QuantizedLayer.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <string>

namespace kvscope::cache {
namespace {

using test::refuses;

config::ModelConfig layers(int64_t count) {
    config::ModelConfig config;
    config.numHiddenLayers = count;
    return config;
}

QuantizationSettings settings(const std::string& backend, int nbits, int64_t axisKey, int64_t axisValue,
                              int64_t groupSize = 4, int64_t residualLength = 4) {
    QuantizationSettings s;
    s.backend = config::quantizerBackendFromString(backend).value();
    s.nbits = nbits;
    s.axisKey = axisKey;
    s.axisValue = axisValue;
    s.groupSize = groupSize;
    s.residualLength = residualLength;
    return s;
}

TEST(QuantizedCacheTest, DefaultsAreTheReferences) {
    const QuantizationSettings defaults;
    EXPECT_EQ(defaults.backend, config::QuantizerBackend::MinMax);
    EXPECT_EQ(defaults.nbits, 4);
    EXPECT_EQ(defaults.axisKey, 0);
    EXPECT_EQ(defaults.axisValue, 0);
    EXPECT_EQ(defaults.groupSize, 64);
    EXPECT_EQ(defaults.residualLength, 128);
}

TEST(QuantizedCacheTest, OneQuantizedLayerPerModelLayer) {
    QuantizedCache cache(layers(3), QuantizationSettings{});
    EXPECT_EQ(cache.typeName(), "QuantizedCache");
    ASSERT_EQ(cache.size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
        const auto& layer = dynamic_cast<const QuantizedLayer&>(cache.layer(i));
        EXPECT_EQ(layer.typeName(), "MinMaxQuantizedLayer");
        EXPECT_EQ(layer.quantizer().nbits(), 4);
        EXPECT_EQ(layer.quantizer().groupSize(), 64);
        EXPECT_EQ(layer.residualLength(), 128);
    }
    EXPECT_FALSE(cache.isCompileable());
    EXPECT_EQ(cache.maxCacheShape(), -1);
    EXPECT_FALSE(cache.offloading());
    EXPECT_EQ(cache.isSliding(), (std::vector<bool>{false, false, false}));
}

TEST(QuantizedCacheTest, Backends) {
    for (const char* backend : {"min-max", "quanto"}) {
        QuantizedCache cache(layers(1), settings(backend, 2, 0, -1));
        EXPECT_EQ(cache.layer(0).typeName(), "MinMaxQuantizedLayer") << backend;
        EXPECT_EQ(QuantizedCache::makeQuantizer(settings(backend, 2, 0, -1))->backend(), config::QuantizerBackend::MinMax);
    }
    QuantizedCache hqq(layers(2), settings("hqq", 3, 1, 0));
    EXPECT_EQ(hqq.layer(1).typeName(), "HQQQuantizedLayer");
    const auto& layer = dynamic_cast<const QuantizedLayer&>(hqq.layer(1));
    EXPECT_EQ(layer.quantizer().nbits(), 3);
    EXPECT_EQ(layer.axisKey(), 1);
    EXPECT_EQ(layer.axisValue(), 0);
}

TEST(QuantizedCacheTest, BitsRefusedPerBackend) {
    for (int nbits : {2, 4, 8}) {
        EXPECT_NO_THROW(QuantizedCache(layers(1), settings("quanto", nbits, 0, 0))) << nbits;
    }
    for (int nbits : {1, 3, 16}) {
        EXPECT_TRUE(refuses([&] { QuantizedCache cache(layers(1), settings("quanto", nbits, 0, 0)); },
                            ErrorKind::Value, {"nbits", "got " + std::to_string(nbits)}));
    }
    for (int nbits : {1, 2, 3, 4, 8}) {
        EXPECT_NO_THROW(QuantizedCache(layers(1), settings("hqq", nbits, 1, 1))) << nbits;
    }
    for (int nbits : {5, 6, 0}) {
        EXPECT_TRUE(refuses([&] { QuantizedCache cache(layers(1), settings("hqq", nbits, 1, 1)); },
                            ErrorKind::Value, {"`nbits` for `HQQ` backend", "got " + std::to_string(nbits)}));
    }
}

TEST(QuantizedCacheTest, AxesRefusedPerBackend) {
    for (int64_t axis : {0, -1}) {
        EXPECT_NO_THROW(QuantizedCache(layers(1), settings("min-max", 4, axis, axis)));
    }
    EXPECT_TRUE(refuses([] { QuantizedCache cache(layers(1), settings("min-max", 4, 1, 0)); },
                        ErrorKind::Value, {"`axis_key`", "[`0`, `-1`]", "got 1"}));
    EXPECT_TRUE(refuses([] { QuantizedCache cache(layers(1), settings("quanto", 4, 0, -2)); },
                        ErrorKind::Value, {"`axis_value`", "got -2"}));
    for (int64_t axis : {0, 1}) {
        EXPECT_NO_THROW(QuantizedCache(layers(1), settings("hqq", 4, axis, axis)));
    }
    EXPECT_TRUE(refuses([] { QuantizedCache cache(layers(1), settings("hqq", 4, -1, 1)); }, ErrorKind::Value,
                        {"`axis_key`", "[`0`, `1`]", "got -1"}));
    EXPECT_TRUE(refuses([] { QuantizedCache cache(layers(1), settings("hqq", 4, 0, 2)); }, ErrorKind::Value,
                        {"`axis_value`", "got 2"}));
}

TEST(QuantizedCacheTest, ResidualLengthAndGroupSizeBelowOneAreRefused) {
    EXPECT_TRUE(refuses([] { QuantizedCache cache(layers(1), settings("min-max", 4, 0, 0, 4, 0)); },
                        ErrorKind::Value, {"residual_length", "got 0"}));
    EXPECT_TRUE(refuses([] { QuantizedCache cache(layers(1), settings("hqq", 4, 1, 1, 4, -2)); },
                        ErrorKind::Value, {"residual_length", "got -2"}));
    EXPECT_TRUE(refuses([] { QuantizedCache cache(layers(1), settings("min-max", 4, 0, 0, 0, 4)); },
                        ErrorKind::Value, {"q_group_size", "0"}));
}

TEST(QuantizedCacheTest, GroupDivisibilityIsRefusedAtUpdateAndTheCacheStaysUsable) {
    QuantizedCache minMax(layers(1), settings("min-max", 4, 0, 0, 64, 4));
    // head_dim 48 along axis 0: 48 elements per (batch row) are not a multiple of 64.
    EXPECT_TRUE(refuses(
        [&] {
            minMax.update(at::ones({1, 1, 1, 48}), at::ones({1, 1, 1, 48}), 0);
        },
        ErrorKind::Value, {"Group size (64) must be a divisor of (48)"}));
    EXPECT_EQ(minMax.seqLength(), 0);
    KeyValueStates out = minMax.update(at::ones({1, 1, 2, 64}), at::ones({1, 1, 2, 64}), 0);
    EXPECT_EQ(out.keys.sizes(), (at::IntArrayRef{1, 1, 2, 64}));
    EXPECT_EQ(minMax.seqLength(), 2);

    QuantizedCache hqq(layers(1), settings("hqq", 4, 1, 1, 8, 4));
    EXPECT_TRUE(refuses(
        [&] {
            hqq.update(at::ones({1, 1, 1, 6}), at::ones({1, 1, 1, 6}), 0);
        },
        ErrorKind::Value, {"group_size should be divisible", "6 elements", "group_size: 8"}));
    hqq.update(at::ones({1, 1, 4, 6}), at::ones({1, 1, 4, 6}), 0);
    EXPECT_EQ(hqq.seqLength(), 4);
}

TEST(QuantizedCacheTest, UpdatesFlowThroughEveryLayer) {
    QuantizedCache cache(layers(2), settings("min-max", 8, 0, 0, 4, 2));
    at::Tensor keys = at::rand({1, 2, 3, 8});
    KeyValueStates out = cache.update(keys, keys, 0);
    EXPECT_TRUE(at::equal(out.keys, keys)); // the prefill comes back unquantized
    cache.update(keys, keys, 1);
    cache.update(keys.narrow(2, 0, 1), keys.narrow(2, 0, 1), 0);
    EXPECT_EQ(cache.seqLength(0), 4);
    EXPECT_EQ(cache.seqLength(1), 3);
    EXPECT_EQ(cache.maskSizes(2, 0), (MaskSizes{6, 0}));
    EXPECT_TRUE(cache.isInitialized());
    EXPECT_TRUE(refuses([&] { cache.update(keys, keys, 2); }, ErrorKind::Index, {"layer index 2"}));
}

TEST(QuantizedCacheTest, NoModelLayersMakeAnEmptyCache) {
    QuantizedCache cache(layers(0), QuantizationSettings{});
    EXPECT_EQ(cache.size(), 0u);
    EXPECT_EQ(cache.seqLength(), 0);
    EXPECT_FALSE(cache.isCompileable());
}

} // namespace
} // namespace kvscope::cache
