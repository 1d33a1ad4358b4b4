// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/StaticIndexedLayer.h"

#include "CacheTestHelpers.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace kvscope::cache {
namespace {

using test::refuses;
using test::states;
using test::values;
using test::Values;

TEST(StaticIndexedLayerTest, WritesInPlaceAndReturnsTheWholeBuffer) {
    StaticIndexedLayer layer(4);
    EXPECT_EQ(layer.typeName(), "StaticIndexedLayer");
    layer.update(states({1, 2}), states({1, 2}));
    EXPECT_EQ(values(layer.updateIndexer(test::indexerKeys({10, 20}))), (Values{10, 20, 0, 0}));
    EXPECT_EQ(values(layer.updateIndexer(test::indexerKeys({30}))), (Values{10, 20, 30, 0}));
    EXPECT_EQ(layer.indexerLength(), 3);
    layer.reset();
    EXPECT_EQ(values(layer.indexerKeys()), (Values{0, 0, 0, 0}));
    EXPECT_EQ(layer.indexerLength(), 0);
}

TEST(StaticIndexedLayerTest, RefusesWritingPastItsLength) {
    StaticIndexedLayer layer(2);
    layer.updateIndexer(test::indexerKeys({1, 2}));
    EXPECT_TRUE(refuses([&] { layer.updateIndexer(test::indexerKeys({3})); }, ErrorKind::Index, {"2 of 2", "max_cache_len"}));
    EXPECT_TRUE(refuses([&] { layer.cropTokens(-1); }, ErrorKind::Attribute, {"crop", "DynamicCache"}));
}

} // namespace
} // namespace kvscope::cache
