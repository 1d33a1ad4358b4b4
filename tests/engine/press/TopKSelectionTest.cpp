// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/press/TopKSelection.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace {

using kvscope::press::TopKSelection;

TEST(TopKSelectionTest, OrdersByScoreDescendingThenIndexAscending) {
    const at::Tensor scores = at::tensor({0.5f, 2.0f, 1.0f, 2.0f, 1.0f, 2.0f}).view({1, 1, 6});
    EXPECT_TRUE(at::equal(TopKSelection::largest(scores, 4), at::tensor({1L, 3L, 5L, 2L}).view({1, 1, 4})));
    EXPECT_TRUE(at::equal(TopKSelection::smallest(scores, 3), at::tensor({0L, 2L, 4L}).view({1, 1, 3})));
}

TEST(TopKSelectionTest, GathersTokensAlongTheSequence) {
    const at::Tensor states = at::arange(12, at::kFloat).view({1, 1, 6, 2});
    const at::Tensor kept = TopKSelection::gather(states, at::tensor({4L, 1L}).view({1, 1, 2}));
    EXPECT_TRUE(at::equal(kept, at::tensor({8.0f, 9.0f, 2.0f, 3.0f}).view({1, 1, 2, 2})));
}

} // namespace
