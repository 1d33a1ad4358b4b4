// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/trace/SessionSpill.h"

#include "FileBytes.h"
#include "SessionOverviewFile.h"
#include "TraceTestHelpers.h"
#include "kvscope/synthetic/SyntheticSession.h"
#include "kvscope/trace/RecordingSink.h"
#include "kvscope/trace/SessionError.h"
#include "kvscope/trace/SessionReader.h"

#include <gtest/gtest.h>
#include <utility>
#include <vector>

using namespace kvscope::trace;
using kvscope::trace::testing::eventsOf;
using kvscope::trace::testing::fileMetadata;
using kvscope::trace::testing::TemporaryFolder;

namespace {

// The oracle: the in-memory timeline of the same events. Series over whole ranges, ending at the newest
// step (which a growing timeline answers from its state, not its columns).
void expectSameSeries(const Timeline& spilled, const Timeline& memory, std::int64_t from) {
    const std::int64_t last = memory.stepCount() - 1;
    for (const std::int64_t start : {std::int64_t{0}, from, last}) {
        kvscope::trace::testing::expectSameSeries(spilled, memory, start, last, "of " + std::to_string(last));
    }
    ASSERT_EQ(spilled.seriesOfEachLayer(SeriesField::StoredTokens, 0, last, 64),
              memory.seriesOfEachLayer(SeriesField::StoredTokens, 0, last, 64));
}

// 6 layers of every kind, offloading, crops, resets, batch operations, empty steps, logits, presses, paged
// serving: 40 tokens.
const std::vector<Event>& session() {
    static const std::vector<Event> events = kvscope::trace::testing::everyKindSession(40, 6);
    return events;
}

} // namespace

TEST(SessionSpillTest, TheTimelineGrowsWithTheFileAndEqualsTheInMemoryOneAfterEveryStep) {
    TemporaryFolder folder;
    Timeline spilled;
    SessionSpill spill(folder.file("live.kvsess"), fileMetadata(), spilled, 4);
    ASSERT_TRUE(spilled.fileBacked());
    EXPECT_EQ(spilled.stepCount(), 0);
    Timeline memory;
    std::int64_t checkedSteps = 0;
    for (std::size_t i = 0; i < session().size(); ++i) {
        spill.emit(session()[i]);
        memory.emit(session()[i]);
        const bool stepDone = i + 1 == session().size() || session()[i + 1].step != session()[i].step;
        if (!stepDone)
            continue;
        spill.flush(); // what a live batch does at its end
        ASSERT_EQ(spilled.stepCount(), memory.stepCount()) << "event " << i;
        ASSERT_EQ(spilled.eventCount(), memory.eventCount());
        const std::int64_t last = memory.stepCount() - 1;
        ASSERT_EQ(spilled.latestState(), memory.latestState()) << "step " << last;
        ASSERT_EQ(spilled.stateAt(last), memory.stateAt(last)) << "step " << last;
        ASSERT_EQ(eventsOf(spilled.eventsOfStep(last)), eventsOf(memory.eventsOfStep(last)))
            << "step " << last;
        expectSameSeries(spilled, memory, last / 2);
        ++checkedSteps;
    }
    EXPECT_GE(checkedSteps, 30);
    EXPECT_TRUE(spilled.events().empty()) << "the events stay in the file";
    for (std::int64_t step = 0; step < memory.stepCount(); ++step) {
        ASSERT_EQ(spilled.stateAt(step), memory.stateAt(step)) << "step " << step;
        ASSERT_EQ(eventsOf(spilled.eventsOfStep(step)), eventsOf(memory.eventsOfStep(step)))
            << "step " << step;
    }
    EXPECT_EQ(std::vector<Event>(spilled.retainedEvents().begin(), spilled.retainedEvents().end()),
              std::vector<Event>(memory.retainedEvents().begin(), memory.retainedEvents().end()));
    EXPECT_FALSE(spilled.retainedEvents().empty());
}

TEST(SessionSpillTest, MemoryHoldsAtMostTheCachedStepsHoweverLongTheRun) {
    // 2001 steps through a cache of 16 decoded steps: reading every step back keeps 16 frames.
    kvscope::synthetic::SyntheticSessionOptions options;
    options.layers = 4;
    options.tokens = 2000;
    options.promptTokens = 8;
    RecordingSink sink;
    kvscope::synthetic::SyntheticSession::generate(options, sink);
    TemporaryFolder folder;
    Timeline spilled;
    SessionSpill spill(folder.file("long.kvsess"), fileMetadata(), spilled, 16);
    for (const Event& event : sink.events())
        spill.emit(event);
    spill.flush();
    const Timeline memory = kvscope::trace::testing::timelineOf(sink.events());
    ASSERT_EQ(spilled.stepCount(), 2001); // the prefill and 2000 tokens
    for (std::int64_t step = 0; step < spilled.stepCount(); ++step)
        ASSERT_EQ(eventsOf(spilled.eventsOfStep(step)), eventsOf(memory.eventsOfStep(step)))
            << "step " << step;
    EXPECT_EQ(spilled.frameCache()->size(), 16u);
    EXPECT_EQ(spilled.frameCache()->decodes(), 2001u) << "each step decoded once, in order";
    EXPECT_TRUE(spilled.events().empty());
    // The in-memory timeline holds every event; the spilled one an index, keyframes and columns.
    EXPECT_LT(spilled.memoryBytes() * 4, memory.memoryBytes())
        << spilled.memoryBytes() << " B spilled, " << memory.memoryBytes() << " B in memory";
}

TEST(SessionSpillTest, AFinishedSpillIsASessionFileThatOpensAsTheSameSession) {
    TemporaryFolder folder;
    const auto path = folder.file("done.kvsess");
    Timeline spilled;
    {
        SessionSpill spill(path, fileMetadata(), spilled, 8);
        for (const Event& event : session())
            spill.emit(event);
        spill.finish();
        EXPECT_EQ(spill.path(), path);
        EXPECT_GT(spill.bytesWritten(), 0u);
    }
    const SessionContents read = SessionReader::read(path);
    EXPECT_TRUE(read.complete) << read.damage;
    EXPECT_EQ(read.events, session());
    EXPECT_EQ(read.metadata.model, "synthetic");
    SessionContents contents;
    const Timeline reopened = Timeline::openFile(path, contents);
    ASSERT_EQ(reopened.stepCount(), spilled.stepCount());
    for (std::int64_t step = 0; step < reopened.stepCount(); ++step)
        ASSERT_EQ(reopened.stateAt(step), spilled.stateAt(step)) << "step " << step;
    // Saving the spilled timeline a step at a time gives the same events.
    const auto saved = folder.file("saved.kvsess");
    SessionWriter::save(saved, fileMetadata(), [&](EventSink& out) { spilled.replayInto(out); });
    EXPECT_EQ(SessionReader::read(saved).events, session());
}

TEST(SessionSpillTest, TheSpillWritesNoOverviewOfItsOwn) {
    // Its timeline folds the keyframes and columns; the writer does not fold them a second time. A session
    // an ordinary writer summarises (no paged pool), as the control.
    kvscope::synthetic::SyntheticSessionOptions options;
    options.layers = 4;
    options.tokens = 64;
    RecordingSink sink;
    kvscope::synthetic::SyntheticSession::generate(options, sink);
    const std::vector<Event> events = sink.takeEvents();
    TemporaryFolder folder;
    const auto spilledPath = folder.file("live.kvsess");
    Timeline spilled;
    {
        SessionSpill spill(spilledPath, fileMetadata(), spilled, 8);
        for (const Event& event : events)
            spill.emit(event);
        spill.finish();
    }
    const auto savedPath = folder.file("saved.kvsess");
    SessionWriter::save(savedPath, fileMetadata(), events);
    SessionContents contents;
    EXPECT_FALSE(
        SessionOverviewFile::read(FileBytes(spilledPath), spilledPath.string(), contents).has_value());
    EXPECT_TRUE(SessionOverviewFile::read(FileBytes(savedPath), savedPath.string(), contents).has_value());
    // Without one the file still opens, through the pass, as the same session.
    const Timeline reopened = Timeline::openFile(spilledPath, contents);
    ASSERT_EQ(reopened.stepCount(), spilled.stepCount());
    for (std::int64_t step = 0; step < reopened.stepCount(); ++step)
        ASSERT_EQ(reopened.stateAt(step), spilled.stateAt(step)) << "step " << step;
}

TEST(SessionSpillTest, EventsFiledLateOrAfterAStepEndStayInTheirStep) {
    // A StepEnd writes its chunk at once; an event after it, or one stamped with an older step, is filed
    // under the newest step (a second chunk of it), as the in-memory timeline files it.
    const std::vector<Event> events = {
        kvscope::trace::testing::makeEvent(0, 0, UpdateEvent{4, 4, 4, -1, 4, 64}),
        kvscope::trace::testing::makeEvent(0, -1, StepEndEvent{}),
        kvscope::trace::testing::makeEvent(0, 0, UpdateEvent{1, 5, 5, -1, 5, 80}),
        kvscope::trace::testing::makeEvent(2, 0, UpdateEvent{1, 6, 6, -1, 6, 96}),
        kvscope::trace::testing::makeEvent(1, 0, UpdateEvent{1, 7, 7, -1, 7, 112}),
        kvscope::trace::testing::makeEvent(2, -1, StepEndEvent{}),
    };
    TemporaryFolder folder;
    Timeline spilled;
    SessionSpill spill(folder.file("late.kvsess"), fileMetadata(), spilled, 8);
    for (const Event& event : events)
        spill.emit(event);
    spill.flush();
    const Timeline memory = kvscope::trace::testing::timelineOf(events);
    ASSERT_EQ(spilled.stepCount(), 3);
    for (std::int64_t step = 0; step < 3; ++step) {
        EXPECT_EQ(eventsOf(spilled.eventsOfStep(step)), eventsOf(memory.eventsOfStep(step)))
            << "step " << step;
        EXPECT_EQ(spilled.stateAt(step), memory.stateAt(step)) << "step " << step;
    }
    EXPECT_EQ(spilled.eventsOfStep(0).size(), 3u);
    EXPECT_EQ(spilled.eventsOfStep(2).size(), 3u);
}

TEST(SessionSpillTest, AnUnwritablePathIsRefusedWithItsName) {
    Timeline timeline;
    try {
        SessionSpill spill("/nonexistent-kvscope-folder/live.kvsess", fileMetadata(), timeline);
        FAIL() << "expected SessionError";
    } catch (const SessionError& error) {
        EXPECT_NE(std::string(error.what()).find("/nonexistent-kvscope-folder/live.kvsess"),
                  std::string::npos)
            << error.what();
    }
    EXPECT_FALSE(timeline.fileBacked()) << "the timeline is left as it was";
}
