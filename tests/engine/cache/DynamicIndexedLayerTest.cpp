// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/DynamicIndexedLayer.h"

#include "CacheTestHelpers.h"
#include "kvscope/cache/DynamicCache.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace kvscope::cache {
namespace {

using test::refuses;
using test::states;
using test::values;
using test::Values;

TEST(DynamicIndexedLayerTest, GrowsItsIndexerKeysBesideKeysAndValues) {
    DynamicIndexedLayer layer;
    EXPECT_EQ(layer.typeName(), "DynamicIndexedLayer");
    ASSERT_EQ(layer.asIndexed(), &layer);
    layer.update(states({1, 2}), states({1, 2}));
    EXPECT_EQ(values(layer.updateIndexer(test::indexerKeys({10, 20}))), (Values{10, 20}));
    layer.update(states({3}), states({3}));
    EXPECT_EQ(values(layer.updateIndexer(test::indexerKeys({30}))), (Values{10, 20, 30}));
}

TEST(DynamicIndexedLayerTest, CropsBothMeaningsOnKeysAndIndexer) {
    DynamicIndexedLayer layer;
    layer.update(states({1, 2, 3, 4}), states({1, 2, 3, 4}));
    layer.updateIndexer(test::indexerKeys({10, 20, 30, 40}));
    layer.cropTokens(0); // the release: nothing
    EXPECT_EQ(layer.seqLength(), 4);
    layer.cropTokens(-1); // the release: one token fewer
    EXPECT_EQ(values(layer.keys()), (Values{1, 2, 3}));
    EXPECT_EQ(values(layer.indexerKeys()), (Values{10, 20, 30}));
    layer.crop(2); // the seed: keep two
    EXPECT_EQ(values(layer.keys()), (Values{1, 2}));
    EXPECT_EQ(values(layer.indexerKeys()), (Values{10, 20}));
    layer.cropTokens(-5); // the release: more than held empties both
    EXPECT_EQ(layer.seqLength(), 0);
    EXPECT_EQ(layer.indexerKeys().size(1), 0);
}

TEST(DynamicIndexedLayerTest, RefusesIndexerKeysOfAnotherShape) {
    DynamicIndexedLayer layer;
    EXPECT_TRUE(refuses([&] { layer.updateIndexer(at::zeros({1, 2})); }, ErrorKind::Value,
                        {"[batch, tokens, index_head_dim]", "2 dimensions"}));
    layer.updateIndexer(test::indexerKeys({1}));
    EXPECT_TRUE(refuses([&] { layer.updateIndexer(at::zeros({1, 1, 3})); }, ErrorKind::Runtime, {"Sizes of tensors"}));
}

TEST(DynamicIndexedLayerTest, ACacheRefusesTheIndexerOfAnyOtherLayer) {
    config::ModelConfig config;
    config.numHiddenLayers = 2;
    config.layerTypes = {"full_attention", "indexed_attention"};
    DynamicCache cache(config);
    EXPECT_EQ(cache.layer(1).typeName(), "DynamicIndexedLayer");
    EXPECT_EQ(values(cache.updateIndexer(test::indexerKeys({5}), 1)), (Values{5}));
    EXPECT_TRUE(refuses([&] { cache.updateIndexer(test::indexerKeys({5}), 0); }, ErrorKind::Value,
                        {"layer 0", "DynamicLayer", "indexed_attention"}));
}

} // namespace
} // namespace kvscope::cache
