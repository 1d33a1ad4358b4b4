// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/trace/RecordingSink.h"

#include <gtest/gtest.h>

using namespace kvscope::trace;

TEST(RecordingSinkTest, RecordsCopiesInOrder) {
    RecordingSink sink;
    EventSink& asSink = sink;
    Event first{0, -1, 0, StepBeginEvent{-1, "hello"}};
    asSink.emit(first);
    asSink.emit(Event{0, 2, 1, UpdateEvent{.tokensIn = 4, .seqLength = 4}});
    first.step = 99; // the sink owns its copy

    ASSERT_EQ(sink.size(), 2u);
    EXPECT_EQ(sink.events()[0].step, 0);
    EXPECT_EQ(std::get<StepBeginEvent>(sink.events()[0].payload).text, "hello");
    EXPECT_EQ(sink.events()[1].layer, 2);
    EXPECT_EQ(std::get<UpdateEvent>(sink.events()[1].payload).seqLength, 4);
}

TEST(RecordingSinkTest, TakeEventsEmptiesTheSink) {
    RecordingSink sink;
    sink.emit(Event{0, -1, 0, ResetEvent{}});
    sink.emit(Event{1, -1, 1, ResetEvent{}});
    const std::vector<Event> taken = sink.takeEvents();
    EXPECT_EQ(taken.size(), 2u);
    EXPECT_EQ(sink.size(), 0u);
    sink.emit(Event{2, -1, 2, ResetEvent{}});
    ASSERT_EQ(sink.size(), 1u);
    EXPECT_EQ(sink.events()[0].step, 2);
    sink.clear();
    EXPECT_TRUE(sink.events().empty());
}
