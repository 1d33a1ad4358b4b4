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
constexpr HeadSlot V = HeadSlot::Vacant;

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

/// KeyRerotation over 8 positions: head 0 kept 1 3 6 7, head 1 kept 0 2 5 7 (recorded in score order);
/// each head's kept keys now sit at 0 1 2 3 in position order.
trace::CompressionEvent rerotatedEvent() {
    trace::CompressionEvent event;
    event.lengthBefore = 8;
    event.lengthAfter = 4;
    event.heads = 2;
    event.droppedCount = 4;
    event.keptRecorded = 8;
    event.positions = {6, 1, 7, 3, /* head 1 */ 0, 2, 5, 7, /* dropped */ 0, 2, 4, 5, 1, 3, 4, 6};
    event.rotaryPositions = {2, 0, 3, 1, /* head 1 */ 0, 1, 2, 3};
    return event;
}

TEST(HeadOccupancyGeometryTest, ReRotatedKeysListTheirNewPositionsBesideTheKeptOnes) {
    const HeadDecision decision = HeadOccupancyGeometry::decisionOf(rerotatedEvent(), 0, 8);
    ASSERT_TRUE(decision.rerotated());
    EXPECT_EQ(decision.kept, (std::vector<std::vector<std::int64_t>>{{1, 3, 6, 7}, {0, 2, 5, 7}}));
    EXPECT_EQ(decision.rotary, (std::vector<std::vector<std::int64_t>>{{0, 1, 2, 3}, {0, 1, 2, 3}}));
    EXPECT_FALSE(HeadOccupancyGeometry::decisionOf(uniformEvent(), 0, 6).rerotated());
    // The token rows are a plain eviction's.
    EXPECT_EQ(HeadOccupancyGeometry::runsOf(decision, 0, 10),
              (Runs{{0, 1, D}, {1, 2, K}, {2, 3, D}, {3, 4, K}, {4, 6, D}, {6, 8, K}, {8, 10, L}}));
}

TEST(HeadOccupancyGeometryTest, RotatedRowsShowTheKeysAtTheirNewPositions) {
    const HeadDecision decision = HeadOccupancyGeometry::decisionOf(rerotatedEvent(), 0, 8);
    struct Case {
        std::size_t head;
        std::int64_t positions;
        Runs runs;
    };
    const std::vector<Case> cases = {
        // The 4 kept keys at 0-3, no key rotated to 4-7.
        {0, 8, {{0, 4, K}, {4, 8, V}}},
        {1, 8, {{0, 4, K}, {4, 8, V}}},
        // Two tokens since the decision, at their own positions.
        {0, 10, {{0, 4, K}, {4, 8, V}, {8, 10, L}}},
        // A narrower view cuts the row.
        {0, 3, {{0, 3, K}}},
        {2, 8, {}},
        {0, 0, {}},
    };
    for (const Case& test : cases) {
        EXPECT_EQ(HeadOccupancyGeometry::rotatedRunsOf(decision, test.head, test.positions), test.runs)
            << test.head << " " << test.positions;
    }
    // No rotated rows without a map.
    EXPECT_TRUE(
        HeadOccupancyGeometry::rotatedRunsOf(HeadOccupancyGeometry::decisionOf(uniformEvent(), 0, 6), 0, 6)
            .empty());
}

TEST(HeadOccupancyGeometryTest, ThePositionMapLinksOldPositionsToNewOnes) {
    const HeadDecision decision = HeadOccupancyGeometry::decisionOf(rerotatedEvent(), 0, 8);
    using Links = std::vector<RotaryLink>;
    struct Case {
        std::size_t head;
        std::size_t limit;
        Links links;
    };
    const std::vector<Case> cases = {
        {0, 48, {{1, 0}, {3, 1}, {6, 2}, {7, 3}}},
        {1, 48, {{0, 0}, {2, 1}, {5, 2}, {7, 3}}},
        // At most 3 lines: every 3rd from the first, and the last.
        {0, 3, {{1, 0}, {7, 3}}},
        {1, 2, {{0, 0}, {7, 3}}},
        {5, 48, {}},
    };
    for (const Case& test : cases) {
        EXPECT_EQ(HeadOccupancyGeometry::linksOf(decision, test.head, test.limit), test.links)
            << test.head << " " << test.limit;
    }
    struct Lookup {
        std::size_t head;
        std::int64_t position;
        std::optional<std::int64_t> from; ///< the key now at `position` was computed at
        std::optional<std::int64_t> to;   ///< the key of kept position `position` now sits at
    };
    const std::vector<Lookup> lookups = {
        {0, 0, 1, std::nullopt}, // head 0 dropped position 0; the key of position 1 sits there now
        {0, 1, 3, 0},
        {0, 2, 6, std::nullopt},
        {0, 3, 7, 1},
        {0, 4, std::nullopt, std::nullopt},
        {0, 6, std::nullopt, 2},
        {0, 7, std::nullopt, 3},
        {1, 0, 0, 0},
        {1, 2, 5, 1},
        {1, 5, std::nullopt, 2},
        {1, 9, std::nullopt, std::nullopt},
        {3, 1, std::nullopt, std::nullopt},
    };
    for (const Lookup& test : lookups) {
        EXPECT_EQ(HeadOccupancyGeometry::rotatedFrom(decision, test.head, test.position), test.from)
            << test.head << " " << test.position;
        EXPECT_EQ(HeadOccupancyGeometry::rotatedTo(decision, test.head, test.position), test.to)
            << test.head << " " << test.position;
    }
}

} // namespace
} // namespace kvscope::gui
