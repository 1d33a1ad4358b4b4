// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/geometry/HeadOccupancyGeometry.h"

#include <gtest/gtest.h>

namespace kvscope::gui {
namespace {

using Runs = std::vector<HeadRun>;
constexpr HeadSlot K = HeadSlot::Kept;
constexpr HeadSlot D = HeadSlot::Dropped;
constexpr HeadSlot M = HeadSlot::Masked;
constexpr HeadSlot L = HeadSlot::Later;

/// An evicting press's event over 6 positions: every head kept 3 (head 0: 0 4 5, head 1: 5 1 2).
trace::CompressionEvent uniformEvent() {
    trace::CompressionEvent event;
    event.lengthBefore = 6;
    event.lengthAfter = 3;
    event.heads = 2;
    event.droppedCount = 3;
    event.keptRecorded = 6;
    event.positions = {0, 4, 5, 5, 1, 2, /* dropped */ 1, 2, 3, 0, 3, 4};
    return event;
}

TEST(HeadOccupancyGeometryTest, DecodesEachHeadsSortedLists) {
    const HeadDecision decision = HeadOccupancyGeometry::decisionOf(uniformEvent(), 0, 6);
    EXPECT_FALSE(decision.masking);
    EXPECT_TRUE(decision.keptRecorded);
    EXPECT_EQ(decision.coveredPositions, 6);
    EXPECT_EQ(decision.kept, (std::vector<std::vector<std::int64_t>>{{0, 4, 5}, {1, 2, 5}}));
    EXPECT_EQ(decision.dropped, (std::vector<std::vector<std::int64_t>>{{1, 2, 3}, {0, 3, 4}}));
    EXPECT_EQ(decision.keptCounts, (std::vector<std::int64_t>{3, 3}));
    // Without the prompt's length the covered positions end after the largest recorded one.
    EXPECT_EQ(HeadOccupancyGeometry::decisionOf(uniformEvent(), 0, 0).coveredPositions, 6);
}

TEST(HeadOccupancyGeometryTest, AChannelPressKeepsEveryPositionAndListsItsChannels) {
    trace::CompressionEvent event{4, 4, 2, 0, 8, {0, 1, 2, 3, 0, 1, 2, 3}, {}, {}, {}};
    event.prunedChannels = {5, 2, 7, 0};
    const HeadDecision decision = HeadOccupancyGeometry::decisionOf(event, 0, 4);
    EXPECT_FALSE(decision.masking) << "ThinK hides nothing";
    EXPECT_EQ(decision.prunedChannels, (std::vector<std::vector<std::int32_t>>{{5, 2}, {7, 0}}));
    EXPECT_EQ(HeadOccupancyGeometry::runsOf(decision, 1, 6), (Runs{{0, 4, K}, {4, 6, L}}));
    EXPECT_TRUE(HeadOccupancyGeometry::decisionOf(uniformEvent(), 0, 6).prunedChannels.empty());
}

TEST(HeadOccupancyGeometryTest, RowsInPositionOrder) {
    const HeadDecision decision = HeadOccupancyGeometry::decisionOf(uniformEvent(), 0, 6);
    struct Case {
        std::size_t head;
        std::int64_t positions;
        Runs runs;
    };
    const std::vector<Case> cases = {
        {0, 6, {{0, 1, K}, {1, 4, D}, {4, 6, K}}},
        {1, 6, {{0, 1, D}, {1, 3, K}, {3, 5, D}, {5, 6, K}}},
        // Two tokens arrived after the decision.
        {0, 8, {{0, 1, K}, {1, 4, D}, {4, 6, K}, {6, 8, L}}},
        // A narrower view cuts the row.
        {1, 2, {{0, 1, D}, {1, 2, K}}},
        {2, 6, {}},
        {0, 0, {}},
    };
    for (const Case& test : cases) {
        EXPECT_EQ(HeadOccupancyGeometry::runsOf(decision, test.head, test.positions), test.runs)
            << test.head << " " << test.positions;
    }
}

TEST(HeadOccupancyGeometryTest, WithoutKeptPositionsTheDroppedOnesAreMarked) {
    trace::CompressionEvent event = uniformEvent();
    event.keptRecorded = 0; // more kept tokens than an event records
    event.positions = {1, 2, 3, 0, 3, 4};
    const HeadDecision decision = HeadOccupancyGeometry::decisionOf(event, 2, 7);
    EXPECT_FALSE(decision.keptRecorded);
    EXPECT_EQ(decision.step, 2);
    EXPECT_EQ(decision.keptCounts, (std::vector<std::int64_t>{3, 3}));
    EXPECT_EQ(HeadOccupancyGeometry::runsOf(decision, 0, 8),
              (Runs{{0, 1, K}, {1, 4, D}, {4, 7, K}, {7, 8, L}}));
    EXPECT_EQ(HeadOccupancyGeometry::runsOf(decision, 1, 7),
              (Runs{{0, 1, D}, {1, 3, K}, {3, 5, D}, {5, 7, K}}));
}

TEST(HeadOccupancyGeometryTest, PerHeadBudgetsGiveRowsOfTheirOwn) {
    // AdaKV over 5 positions: head 0 keeps 4, head 1 keeps 1; the cache keeps its length.
    trace::CompressionEvent event;
    event.lengthBefore = 5;
    event.lengthAfter = 5;
    event.heads = 2;
    event.keptPerHead = {4, 1};
    event.droppedCount = 5;
    event.keptRecorded = 5;
    event.positions = {0, 1, 3, 4, /* head 1 */ 4, /* dropped */ 2, 0, 1, 2, 3};
    const HeadDecision decision = HeadOccupancyGeometry::decisionOf(event, 0, 5);
    EXPECT_TRUE(decision.masking);
    EXPECT_EQ(decision.keptCounts, (std::vector<std::int64_t>{4, 1}));
    EXPECT_EQ(HeadOccupancyGeometry::runsOf(decision, 0, 6),
              (Runs{{0, 2, K}, {2, 3, M}, {3, 5, K}, {5, 6, L}}));
    EXPECT_EQ(HeadOccupancyGeometry::runsOf(decision, 1, 6), (Runs{{0, 4, M}, {4, 5, K}, {5, 6, L}}));
    // Lists that disagree with their counts (a damaged file) give no rows.
    event.positions.pop_back();
    EXPECT_TRUE(HeadOccupancyGeometry::decisionOf(event, 0, 5).kept.empty());
}

TEST(HeadOccupancyGeometryTest, AMaskingPressMasksInsteadOfDropping) {
    trace::CompressionEvent event = uniformEvent();
    event.lengthAfter =
        event.lengthBefore; // the cache kept its length: the per-head counts say what was kept
    event.keptPerHead = {3, 3};
    event.droppedCount = 6;
    const HeadDecision decision = HeadOccupancyGeometry::decisionOf(event, 0, 6);
    EXPECT_TRUE(decision.masking);
    EXPECT_EQ(decision.keptCounts, (std::vector<std::int64_t>{3, 3}));
    EXPECT_EQ(HeadOccupancyGeometry::runsOf(decision, 0, 7),
              (Runs{{0, 1, K}, {1, 4, M}, {4, 6, K}, {6, 7, L}}));
}

} // namespace
} // namespace kvscope::gui
