// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/models/SpeculationHistory.h"

#include "GuiTestHelpers.h"

#include <gtest/gtest.h>

namespace kvscope::gui {
namespace {

using Kind = SpeculationHistory::DraftMark::Kind;

trace::Timeline speculativeTimeline() {
    trace::Timeline timeline;
    timeline.emitAll(testing::speculativeSession().events);
    return timeline;
}

TEST(SpeculationHistoryTest, StepsAddTheirAcceptedDraftsBeforeTheirOwnToken) {
    const trace::Timeline timeline = speculativeTimeline();
    SpeculationHistory history;
    history.update(timeline);
    ASSERT_EQ(history.verifications().size(), 3U);
    EXPECT_EQ(history.at(2)->event.accepted, 3);
    EXPECT_EQ(history.at(3), nullptr) << "step 3 decodes plainly";
    // Prompt of 5: the token each step produces (the one the next step feeds).
    const std::pair<std::int64_t, std::int64_t> produced[] = {{0, 6}, {1, 7}, {2, 11}, {3, 12}, {4, 13}};
    for (const auto& [step, position] : produced) {
        EXPECT_EQ(history.producedPosition(5, step), position) << "step " << step;
    }
    EXPECT_EQ(history.producedPosition(0, 1), -1) << "no prompt pieces, no positions";
    struct Case {
        std::int64_t position;
        std::optional<std::pair<std::int64_t, std::int64_t>> producer;
        Kind mark;
        std::int64_t markStep;
    };
    const Case cases[] = {
        {4, std::nullopt, Kind::None, -1},   {5, {{0, 0}}, Kind::Accepted, 0}, {6, {{0, 1}}, Kind::Replacement, 0},
        {7, {{1, 0}}, Kind::None, -1},       {8, {{2, 0}}, Kind::Accepted, 2}, {10, {{2, 2}}, Kind::Accepted, 2},
        {11, {{2, 3}}, Kind::None, -1},      {12, {{3, 0}}, Kind::None, -1},   {13, {{4, 0}}, Kind::None, -1},
    };
    for (const Case& c : cases) {
        EXPECT_EQ(history.producer(5, c.position), c.producer) << "position " << c.position;
        const SpeculationHistory::DraftMark mark = history.markAt(5, c.position);
        EXPECT_EQ(mark.kind, c.mark) << "position " << c.position;
        EXPECT_EQ(mark.step, c.markStep) << "position " << c.position;
    }
}

TEST(SpeculationHistoryTest, WithoutSpeculationEachStepAddsOneToken) {
    trace::Timeline timeline;
    timeline.emit(trace::Event{0, -1, 0, trace::StepBeginEvent{}});
    timeline.emit(trace::Event{1, -1, 1, trace::StepBeginEvent{}});
    SpeculationHistory history;
    history.update(timeline);
    EXPECT_TRUE(history.empty());
    EXPECT_EQ(history.producedPosition(3, 1), 4);
    EXPECT_EQ(history.producer(3, 4), (std::pair<std::int64_t, std::int64_t>{1, 0}));
    EXPECT_EQ(history.markAt(3, 4).kind, Kind::None);
}

TEST(SpeculationHistoryTest, ReadsALiveRunAsItGrowsAndANewSessionAfresh) {
    const std::vector<trace::Event> events = testing::speculativeSession().events;
    trace::Timeline timeline;
    SpeculationHistory history;
    const auto firstStep = std::find_if(events.begin(), events.end(), [](const trace::Event& e) { return e.step > 0; });
    timeline.emitAll(std::span(events.begin(), firstStep));
    history.update(timeline);
    EXPECT_EQ(history.verifications().size(), 1U);
    timeline.emitAll(std::span(firstStep, events.end()));
    history.update(timeline);
    EXPECT_EQ(history.verifications().size(), 3U);
    timeline.clear();
    history.update(timeline);
    EXPECT_TRUE(history.empty());
}

} // namespace
} // namespace kvscope::gui
