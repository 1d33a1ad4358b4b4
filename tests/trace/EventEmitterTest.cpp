// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/trace/EventEmitter.h"

#include "kvscope/trace/RecordingSink.h"

#include <gtest/gtest.h>

using namespace kvscope::trace;

TEST(EventEmitterTest, WithoutSinkNothingHappens) {
    EventEmitter emitter;
    EXPECT_FALSE(emitter.enabled());
    emitter.emit(0, UpdateEvent{});
    EXPECT_EQ(emitter.nextSequence(), 0u); // no event, no sequence number consumed
}

TEST(EventEmitterTest, StampsStepLayerAndMonotonicSequence) {
    RecordingSink sink;
    EventEmitter emitter(&sink);
    ASSERT_TRUE(emitter.enabled());
    emitter.emit(-1, StepBeginEvent{-1, "prompt"});
    emitter.emit(3, UpdateEvent{.tokensIn = 5, .seqLength = 5, .storedTokens = 5});
    emitter.setStep(1);
    emitter.emit(3, MaskSizesEvent{1, 6, 0});

    ASSERT_EQ(sink.size(), 3u);
    EXPECT_EQ(sink.events()[0], (Event{0, -1, 0, StepBeginEvent{-1, "prompt"}}));
    EXPECT_EQ(sink.events()[1],
              (Event{0, 3, 1, UpdateEvent{.tokensIn = 5, .seqLength = 5, .storedTokens = 5}}));
    EXPECT_EQ(sink.events()[2], (Event{1, 3, 2, MaskSizesEvent{1, 6, 0}}));
    EXPECT_EQ(emitter.nextSequence(), 3u);
    EXPECT_EQ(emitter.step(), 1);
}

TEST(EventEmitterTest, SwitchingSinksKeepsTheSequence) {
    RecordingSink first;
    RecordingSink second;
    EventEmitter emitter(&first);
    emitter.emit(-1, ResetEvent{});
    emitter.setSink(nullptr);
    emitter.emit(-1, ResetEvent{});
    emitter.setSink(&second);
    emitter.emit(-1, ResetEvent{});
    ASSERT_EQ(second.size(), 1u);
    EXPECT_EQ(second.events()[0].sequence, 1u);
    EXPECT_EQ(emitter.sink(), &second);
}
