// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/press/TopKSelection.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <stdexcept>

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

TEST(TopKSelectionTest, GatherEqualsTorchGatherAcrossBatchesAndHeads) {
    // Every batch row and KV head keeps different slots; the reference is at::gather's element lookup.
    at::manual_seed(3);
    const at::Tensor states = at::randn({2, 3, 9, 4});
    const at::Tensor kept = at::randint(0, 9, {2, 3, 5}, at::kLong);
    const at::Tensor reference = states.gather(2, kept.unsqueeze(-1).expand({-1, -1, -1, 4}));
    EXPECT_TRUE(at::equal(TopKSelection::gather(states, kept), reference));
    // An index for fewer heads than the states hold reads those heads only, as gather does.
    const at::Tensor firstHead = kept.narrow(1, 0, 1);
    EXPECT_TRUE(at::equal(TopKSelection::gather(states, firstHead),
                          states.gather(2, firstHead.unsqueeze(-1).expand({-1, -1, -1, 4}))));
    // A non-contiguous cache (a transposed view) gathers the same.
    const at::Tensor transposed = at::randn({2, 9, 3, 4}).transpose(1, 2);
    EXPECT_TRUE(at::equal(TopKSelection::gather(transposed, kept),
                          transposed.gather(2, kept.unsqueeze(-1).expand({-1, -1, -1, 4}))));
}

TEST(TopKSelectionTest, GatherRefusesASlotOutsideTheCache) {
    const at::Tensor states = at::zeros({1, 2, 6, 2});
    // Slot 6 of head 0 would be head 1's slot 0 in a flat row index.
    EXPECT_THROW(TopKSelection::gather(states, at::tensor({0L, 6L, 1L, 2L}).view({1, 2, 2})),
                 std::out_of_range);
    EXPECT_THROW(TopKSelection::gather(states, at::tensor({-1L, 0L, 1L, 2L}).view({1, 2, 2})),
                 std::out_of_range);
}

TEST(TopKSelectionTest, TorchOrderIsTorchTopkOrderForATopKAndLeavesOtherOrdersAlone) {
    // torch.topk's CPU order of these scores (torch 1.13): [3, 5, 0, 2] and [4, 7, 6, 3, 1]; the canonical
    // one puts ties in index order.
    const at::Tensor scores = at::tensor({2.0f, 1.0f, 2.0f, 2.0f, 0.5f, 2.0f}).view({1, 1, 6});
    const at::Tensor canonical = TopKSelection::largest(scores, 4);
    EXPECT_TRUE(at::equal(canonical, at::tensor({0L, 2L, 3L, 5L}).view({1, 1, 4})));
    EXPECT_TRUE(at::equal(TopKSelection::torchOrder(scores, canonical),
                          at::tensor({3L, 5L, 0L, 2L}).view({1, 1, 4})));
    const at::Tensor more = at::tensor({0.5f, 3.0f, 1.0f, 3.0f, 3.0f, 0.1f, 3.0f, 3.0f}).view({1, 1, 8});
    EXPECT_TRUE(at::equal(TopKSelection::torchOrder(more, TopKSelection::largest(more, 5)),
                          at::tensor({4L, 7L, 6L, 3L, 1L}).view({1, 1, 5})));
    // Kept by position (KeyRerotation sorts its top-k): not a score order, so it stays as it is.
    const at::Tensor byPosition = at::tensor({0L, 2L, 3L, 5L}).view({1, 1, 4});
    const at::Tensor spread = at::tensor({4.0f, 1.0f, 3.0f, 2.0f, 0.5f, 5.0f}).view({1, 1, 6});
    EXPECT_TRUE(at::equal(TopKSelection::torchOrder(spread, byPosition), byPosition));
}

} // namespace
