// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/geometry/PoolGeometry.h"

#include <gtest/gtest.h>
#include <vector>

namespace kvscope::gui {
namespace {

TEST(PoolGeometryTest, LayoutPicksTheLargestCellsThatFit) {
    struct Case {
        int blocks;
        double width, height;
        PoolLayout expected;
    };
    // Worked by hand: gap = max(1, floor(cell / 10)); columns = floor((width + gap) / (cell + gap)).
    const std::vector<Case> cases = {
        {10, 200, 100, {5, 2, 37, 3, 0, 0}},    // 38 would need 4 columns and 3 rows (120 px)
        {10, 1000, 100, {12, 1, 72, 7, 0, 0}},  // one row of the largest cells
        {1000, 100, 50, {5, 200, 16, 1, 0, 0}}, // nothing fits: smallest cells, the view scrolls
        {0, 300, 300, {1, 0, 72, 7, 0, 0}},     // no pool
        {1, 10, 10, {1, 1, 16, 1, 0, 0}},       // narrower than one cell: still one column
    };
    for (const Case& test : cases) {
        EXPECT_EQ(PoolGeometry::layout(test.blocks, test.width, test.height, 16, 72), test.expected)
            << test.blocks << " blocks in " << test.width << "x" << test.height;
    }
}

TEST(PoolGeometryTest, CellsWrapAndPixelsFindThem) {
    const PoolLayout layout{5, 2, 37, 3, 10, 20};
    EXPECT_EQ(PoolGeometry::cellRect(layout, 0), (CellRect{10, 20, 37}));
    EXPECT_EQ(PoolGeometry::cellRect(layout, 4), (CellRect{170, 20, 37}));
    EXPECT_EQ(PoolGeometry::cellRect(layout, 7), (CellRect{90, 60, 37}));
    EXPECT_DOUBLE_EQ(PoolGeometry::height(layout), 77);
    struct Case {
        double x, y;
        int block;
    };
    const std::vector<Case> cases = {
        {90, 60, 7},   {126.9, 96.9, 7}, {127, 60, -1}, // the gap after a cell
        {90, 97, -1},  {9, 60, -1},      {10, 19, -1},  // above and left of the grid
        {210, 21, -1}, {10, 100, -1},                   // past the last column; a third row has no block 10
        {170, 20, 4},  {50, 60, 6},
    };
    for (const Case& test : cases) {
        EXPECT_EQ(PoolGeometry::blockAt(layout, test.x, test.y, 10), test.block) << test.x << ", " << test.y;
    }
}

trace::PagedState sixBlocks() {
    trace::PagedState state;
    state.active = true;
    state.blockSize = 4;
    state.numBlocks = 6;
    state.groupWindows = {0};
    state.freeQueue = {4, 2, 5};
    // id, ref count, cached, hash, group
    state.blocks = {{0, 2, true, 11, 0}, {1, 1, false, 0, 0}, {2, 0, true, 12, 0},
                    {3, 1, true, 13, 0}, {4, 0, false, 0, 0}, {5, 0, true, 14, 0}};
    trace::PagedRequestState ra{"ra", trace::PagedRequestPhase::Running, {{0, 1}}, 8};
    trace::PagedRequestState rb{
        "rb", trace::PagedRequestPhase::Finished, {{3}}, 4}; // keeps its table on record
    trace::PagedRequestState rc{"rc", trace::PagedRequestPhase::Running, {{0, 3}}, 6};
    state.requests = {ra, rb, rc};
    return state;
}

TEST(PoolGeometryTest, CellsSayWhoHoldsEachBlockAndWhatTheStepDid) {
    const std::vector<BlockCell> cells = PoolGeometry::cellsOf(sixBlocks(), -1, {1}, {0}, {4});
    // block, kind, owners, ref, rank, group, other group, allocated, touched, evicted
    const std::vector<BlockCell> expected = {
        {0, BlockCellKind::Held, {0, 2}, 2, -1, 0, false, false, true, false},
        {1, BlockCellKind::Held, {0}, 1, -1, 0, false, true, false, false},
        {2, BlockCellKind::CachedFree, {}, 0, 1, 0, false, false, false, false},
        {3, BlockCellKind::Held, {2}, 1, -1, 0, false, false, false, false}, // rb finished: not a holder
        {4, BlockCellKind::Free, {}, 0, 0, 0, false, false, false, true},
        {5, BlockCellKind::CachedFree, {}, 0, 2, 0, false, false, false, false},
    };
    EXPECT_EQ(cells, expected);
    EXPECT_TRUE(PoolGeometry::cellsOf(trace::PagedState{}, -1, {}, {}, {}).empty());
}

TEST(PoolGeometryTest, AGroupShowsItsOwnTablesAndFadesTheOthers) {
    trace::PagedState state;
    state.active = true;
    state.blockSize = 4;
    state.numBlocks = 4;
    state.nullBlock = 0;
    state.freePolicy = 1;
    state.groupWindows = {0, 8};
    state.freeQueue = {3};
    state.blocks = {{0, 0, false, 0, -1}, {1, 1, true, 5, 0}, {2, 1, false, 0, 1}, {3, 0, false, 0, -1}};
    state.requests = {trace::PagedRequestState{"r0", trace::PagedRequestPhase::Running, {{1}, {0, 2}}, 8}};
    const std::vector<BlockCell> all = PoolGeometry::cellsOf(state, -1, {}, {}, {});
    ASSERT_EQ(all.size(), 4u);
    EXPECT_EQ(all[0].kind, BlockCellKind::Null); // the hole of the sliding table points here
    EXPECT_TRUE(all[0].owners.empty());
    EXPECT_EQ(all[1].owners, std::vector<int>{0});
    EXPECT_EQ(all[2].owners, std::vector<int>{0});
    EXPECT_FALSE(all[1].otherGroup || all[2].otherGroup);
    const std::vector<BlockCell> full = PoolGeometry::cellsOf(state, 0, {}, {}, {});
    EXPECT_EQ(full[1].owners, std::vector<int>{0});
    EXPECT_FALSE(full[1].otherGroup);
    EXPECT_EQ(full[2].kind, BlockCellKind::Held); // held in group 1
    EXPECT_TRUE(full[2].owners.empty());
    EXPECT_TRUE(full[2].otherGroup);
    EXPECT_FALSE(full[0].otherGroup);
    EXPECT_EQ(full[3].kind, BlockCellKind::Free);
}

} // namespace
} // namespace kvscope::gui
