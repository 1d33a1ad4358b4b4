// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/models/PressHistory.h"

#include <gtest/gtest.h>

namespace kvscope::gui {
namespace {

using trace::CompressionEvent;
using trace::Event;

Event compression(std::int64_t step, std::int32_t layer, std::int32_t after) {
    return Event{step, layer, 0, CompressionEvent{8, after, 1, 8 - after, 0, {}, {}, {}, {}}};
}

Event stepEnd(std::int64_t step) {
    return Event{step, -1, 0, trace::StepEndEvent{1, "x", 0}};
}

TEST(PressHistoryTest, FindsEachLayersLatestCompressionAtOrBeforeAStep) {
    trace::Timeline timeline;
    for (const Event& event : {compression(0, 0, 6), compression(0, 1, 5), stepEnd(0), stepEnd(1),
                               compression(2, 0, 4), stepEnd(2), stepEnd(3)}) {
        timeline.emit(event);
    }
    PressHistory history;
    EXPECT_TRUE(history.empty());
    history.update(timeline);
    ASSERT_EQ(history.compressions().size(), 3u);
    EXPECT_EQ(history.latestAt(0, 0)->event.lengthAfter, 6);
    EXPECT_EQ(history.latestAt(0, 1)->event.lengthAfter, 6);
    EXPECT_EQ(history.latestAt(0, 2)->event.lengthAfter, 4);
    EXPECT_EQ(history.latestAt(0, 3)->step, 2);
    EXPECT_EQ(history.latestAt(1, 3)->event.lengthAfter, 5);
    EXPECT_EQ(history.latestAt(2, 3), nullptr);
    EXPECT_EQ(history.latestAt(0, -1), nullptr);
    history.reset();
    EXPECT_TRUE(history.empty());
}

TEST(PressHistoryTest, AGrowingSessionIsReadOnceWithTheLastStepAgain) {
    trace::Timeline timeline;
    timeline.emit(compression(0, 0, 6));
    timeline.emit(stepEnd(0));
    PressHistory history;
    history.update(timeline);
    // A later batch adds to step 0's neighbour and to a new step: each compression is held once.
    timeline.emit(compression(1, 1, 7));
    history.update(timeline);
    timeline.emit(compression(1, 0, 3));
    timeline.emit(stepEnd(1));
    history.update(timeline);
    ASSERT_EQ(history.compressions().size(), 3u);
    EXPECT_EQ(history.latestAt(0, 1)->event.lengthAfter, 3);
    EXPECT_EQ(history.latestAt(1, 1)->event.lengthAfter, 7);
}

} // namespace
} // namespace kvscope::gui
