// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/geometry/PressGeometry.h"

#include <gtest/gtest.h>
#include <limits>

namespace kvscope::gui {
namespace {

using trace::CompressionEvent;

// Two heads over positions 0..5: head 0 keeps {0, 3, 5}, head 1 keeps {0, 4, 5}; 1 and 2 are gone from both.
CompressionEvent twoHeads() {
    return CompressionEvent{6,
                            3,
                            2,
                            3,
                            6,
                            {0, 3, 5, 0, 4, 5, 1, 2, 4, 1, 2, 3},
                            {0.1F, 0.2F, 0.3F, 0.1F, 0.2F, 0.4F},
                            {5.0F, 2.0F, 9.0F, 3.0F, 4.0F, 7.0F},
                            {}};
}

TEST(PressGeometryTest, DroppedRunsFromKeptPositions) {
    struct Case {
        const char* name;
        CompressionEvent event;
        std::vector<SlotSegment> expected;
    };
    const std::vector<Case> cases = {
        {"heads disagree on 3 and 4",
         twoHeads(),
         {{1, 3, SlotState::Dropped}, {3, 5, SlotState::PartlyDropped}}},
        {"one head, a dropped tail",
         CompressionEvent{5, 3, 1, 2, 3, {0, 2, 1, 3, 4}, {}, {}, {}},
         {{3, 5, SlotState::Dropped}}},
        {"earlier drops below the kept ones stay dropped",
         CompressionEvent{3, 2, 1, 1, 2, {7, 9, 8}, {}, {}, {}},
         {{0, 7, SlotState::Dropped}, {8, 9, SlotState::Dropped}}},
        {"kept not recorded: the recorded dropped ones",
         CompressionEvent{4, 2, 2, 2, 0, {1, 2, 2, 3}, {}, {}, {}},
         {{1, 2, SlotState::PartlyDropped}, {2, 3, SlotState::Dropped}, {3, 4, SlotState::PartlyDropped}}},
        {"heads keeping different counts (1.3)",
         CompressionEvent{4, 4, 2, 4, 4, {0, 2, 3, 3, 1, 0, 1, 2}, {}, {}, {3, 1}},
         {{0, 1, SlotState::PartlyDropped}, {1, 2, SlotState::Dropped}, {2, 3, SlotState::PartlyDropped}}},
        {"inconsistent lists: nothing", CompressionEvent{6, 3, 2, 3, 6, {0, 3}, {}, {}, {}}, {}},
        {"a negative kept position is damage: everything seen reads dropped",
         CompressionEvent{2, 1, 1, 1, 1, {-5, 1}, {}, {}, {}},
         {{0, 2, SlotState::Dropped}}},
    };
    for (const Case& test : cases) {
        EXPECT_EQ(PressGeometry::droppedSegments(test.event), test.expected) << test.name;
    }
}

TEST(PressGeometryTest, DroppedRunsReplaceWhatLiesUnder) {
    const std::vector<SlotSegment> base = {{0, 4, SlotState::Quantized}, {4, 8, SlotState::FullPrecision}};
    struct Case {
        const char* name;
        std::vector<SlotSegment> dropped;
        std::vector<SlotSegment> expected;
    };
    const std::vector<Case> cases = {
        {"nothing dropped", {}, base},
        {"inside one run",
         {{1, 2, SlotState::Dropped}},
         {{0, 1, SlotState::Quantized},
          {1, 2, SlotState::Dropped},
          {2, 4, SlotState::Quantized},
          {4, 8, SlotState::FullPrecision}}},
        {"across the boundary, merged",
         {{3, 5, SlotState::Dropped}},
         {{0, 3, SlotState::Quantized}, {3, 5, SlotState::Dropped}, {5, 8, SlotState::FullPrecision}}},
        {"past the end is cut",
         {{7, 12, SlotState::PartlyDropped}},
         {{0, 4, SlotState::Quantized}, {4, 7, SlotState::FullPrecision}, {7, 8, SlotState::PartlyDropped}}},
        {"two in a row",
         {{0, 1, SlotState::Dropped}, {1, 2, SlotState::PartlyDropped}},
         {{0, 1, SlotState::Dropped},
          {1, 2, SlotState::PartlyDropped},
          {2, 4, SlotState::Quantized},
          {4, 8, SlotState::FullPrecision}}},
    };
    for (const Case& test : cases) {
        EXPECT_EQ(PressGeometry::overlaid(base, test.dropped), test.expected) << test.name;
    }
}

TEST(PressGeometryTest, StateAtFindsTheRun) {
    const std::vector<SlotSegment> runs = {{2, 4, SlotState::Dropped}, {4, 6, SlotState::FullPrecision}};
    EXPECT_EQ(PressGeometry::stateAt(runs, 1), std::nullopt);
    EXPECT_EQ(PressGeometry::stateAt(runs, 2), SlotState::Dropped);
    EXPECT_EQ(PressGeometry::stateAt(runs, 4), SlotState::FullPrecision);
    EXPECT_EQ(PressGeometry::stateAt(runs, 6), std::nullopt);
}

TEST(PressGeometryTest, KeptScoresAverageTheHeadsThatKeptAPosition) {
    const std::vector<PositionScore> expected = {{0, 4.0}, {3, 2.0}, {4, 4.0}, {5, 8.0}};
    EXPECT_EQ(PressGeometry::keptScores(twoHeads()), expected);
    CompressionEvent unscored = twoHeads();
    unscored.keptScores.clear(); // format 1.2
    EXPECT_TRUE(PressGeometry::keptScores(unscored).empty());
}

TEST(PressGeometryTest, ShadesAreRanksSoThatPinnedTokensDoNotFlattenTheRest) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    struct Case {
        const char* name;
        std::vector<double> scores;
        std::vector<double> shades;
    };
    const std::vector<Case> cases = {
        {"ascending", {1, 2, 3}, {0.0, 0.5, 1.0}},
        {"a pinned window far above", {0.1, 0.2, 0.3, 100.0, 100.0}, {0.0, 0.25, 0.5, 0.875, 0.875}},
        {"ties share their mean rank", {5, 1, 5}, {0.75, 0.0, 0.75}},
        {"one score", {3}, {0.5}},
        {"not a number sits mid-scale", {1, nan, 2}, {0.0, 0.5, 1.0}},
        {"none", {}, {}},
    };
    for (const Case& test : cases) {
        std::vector<PositionScore> scores;
        for (std::size_t index = 0; index < test.scores.size(); ++index) {
            scores.push_back({static_cast<std::int64_t>(index), test.scores[index]});
        }
        EXPECT_EQ(PressGeometry::rankShades(scores), test.shades) << test.name;
    }
}

} // namespace
} // namespace kvscope::gui
