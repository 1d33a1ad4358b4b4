// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/serving/SlotBinding.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <vector>

using kvscope::serving::LayerGroups;
using kvscope::serving::SlotBinding;

namespace {

std::vector<int64_t> toVector(const at::Tensor& tensor) {
    const at::Tensor cpu = tensor.to(at::kCPU).contiguous();
    return std::vector<int64_t>(cpu.data_ptr<int64_t>(), cpu.data_ptr<int64_t>() + cpu.numel());
}

} // namespace

TEST(SlotBindingTest, SizesFollowTheGroupsAttention) {
    struct Case {
        LayerGroups::Kind kind;
        int64_t window;
        int64_t computed;
        int64_t query;
        int64_t kvLength;
        int64_t kvOffset;
    };
    // Sliding: the query at `computed` sees computed - window + 1 onwards (DynamicSlidingWindowLayer's
    // mask sizes); chunked: the first query's chunk; full: everything.
    const std::vector<Case> cases{
        {LayerGroups::Kind::Full, 0, 0, 5, 5, 0},      {LayerGroups::Kind::Full, 0, 12, 1, 13, 0},
        {LayerGroups::Kind::Sliding, 8, 0, 5, 5, 0},   {LayerGroups::Kind::Sliding, 8, 5, 1, 6, 0},
        {LayerGroups::Kind::Sliding, 8, 8, 1, 8, 1},   {LayerGroups::Kind::Sliding, 8, 20, 3, 10, 13},
        {LayerGroups::Kind::Chunked, 8, 0, 12, 12, 0}, {LayerGroups::Kind::Chunked, 8, 7, 1, 8, 0},
        {LayerGroups::Kind::Chunked, 8, 8, 1, 1, 8},   {LayerGroups::Kind::Chunked, 8, 19, 6, 9, 16},
    };
    for (const Case& c : cases) {
        const auto sizes = SlotBinding::sizesFor(c.kind, c.window, c.computed, c.query);
        EXPECT_EQ(sizes.kvLength, c.kvLength) << LayerGroups::kindName(c.kind) << " computed " << c.computed;
        EXPECT_EQ(sizes.kvOffset, c.kvOffset) << LayerGroups::kindName(c.kind) << " computed " << c.computed;
    }
}

TEST(SlotBindingTest, SlotsFollowTheBlockTable) {
    // Block size 4, table [7, 2, 5]: positions 0..3 in block 7 (slots 28..31), 4..7 in block 2 (8..11),
    // 8..11 in block 5 (20..23).
    const SlotBinding full = SlotBinding::of({7, 2, 5}, 4, LayerGroups::Kind::Full, 0, 6, 3, at::kCPU);
    EXPECT_EQ(toVector(full.readSlots), (std::vector<int64_t>{28, 29, 30, 31, 8, 9, 10, 11, 20}));
    EXPECT_EQ(toVector(full.writeSlots), (std::vector<int64_t>{10, 11, 20}));
    // A window of 4 at position 9 reads positions 6..9; the freed first block is never read.
    const SlotBinding sliding = SlotBinding::of({-1, 2, 5}, 4, LayerGroups::Kind::Sliding, 4, 9, 1, at::kCPU);
    EXPECT_EQ(toVector(sliding.readSlots), (std::vector<int64_t>{10, 11, 20, 21}));
    EXPECT_EQ(toVector(sliding.writeSlots), (std::vector<int64_t>{21}));
    EXPECT_EQ(sliding.sizes.kvOffset, 6);
}

TEST(SlotBindingTest, RefusesTablesThatDoNotHoldThePass) {
    EXPECT_THROW(SlotBinding::of({1, 2}, 4, LayerGroups::Kind::Full, 0, 6, 3, at::kCPU), std::runtime_error);
    try {
        SlotBinding::of({-1, 2}, 4, LayerGroups::Kind::Sliding, 8, 6, 1, at::kCPU);
        FAIL() << "a freed block inside the window must be refused";
    } catch (const std::runtime_error& error) {
        EXPECT_NE(std::string(error.what()).find("position 0"), std::string::npos) << error.what();
    }
}
