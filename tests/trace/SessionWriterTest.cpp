// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/trace/SessionWriter.h"

#include "FileSizeLimit.h"
#include "TraceTestHelpers.h"
#include "kvscope/trace/SessionError.h"
#include "kvscope/trace/SessionFormat.h"
#include "kvscope/trace/SessionReader.h"

#include <chrono>
#include <csignal>
#include <fstream>
#include <gtest/gtest.h>
#include <iterator>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace kvscope::trace;
using namespace kvscope::trace::testing;

namespace {

SessionMetadata sampleMetadata() {
    SessionMetadata metadata;
    metadata.kvscopeVersion = "test";
    metadata.model = "llama";
    metadata.modelConfigJson = R"({"num_hidden_layers":6})";
    metadata.cacheKind = "dynamic";
    metadata.seed = 42;
    metadata.prompt = "The cache";
    metadata.createdUnixNs = 1'700'000'000'000'000'000;
    return metadata;
}

std::vector<Event> eventsThroughStep(std::span<const Event> events, std::int64_t lastStep) {
    std::vector<Event> kept;
    std::int64_t filed = 0;
    for (const Event& event : events) {
        filed = std::max(filed, event.step);
        if (filed > lastStep) {
            break;
        }
        kept.push_back(event);
    }
    return kept;
}

} // namespace

/// The tests that hold for both ways of writing the chunks.
class SessionWriterWritingTest : public ::testing::TestWithParam<ChunkWriting> {};

INSTANTIATE_TEST_SUITE_P(BothWays, SessionWriterWritingTest,
                         ::testing::Values(ChunkWriting::CallersThread, ChunkWriting::Background),
                         [](const ::testing::TestParamInfo<ChunkWriting>& info) {
                             return info.param == ChunkWriting::Background ? "Background" : "CallersThread";
                         });

TEST_P(SessionWriterWritingTest, EachStepIsOnDiskOnceItsStepEndArrives) {
    TemporaryFolder folder;
    const auto path = folder.file("live.kvsess");
    const std::vector<Event> events = everyKindSession(10, 3);
    SessionWriter writer(path, sampleMetadata(), GetParam());
    std::int64_t stepEnds = 0;
    for (std::size_t emitted = 1; emitted <= events.size(); ++emitted) {
        const Event& event = events[emitted - 1];
        writer.emit(event);
        if (event.kind() == EventKind::StepEnd) {
            ++stepEnds;
            if (GetParam() == ChunkWriting::Background) {
                writer.flushStep(); // waits for the writer's thread
            }
            // Read while the writer still runs: what a crash at this moment would leave.
            const SessionContents contents = SessionReader::read(path);
            EXPECT_FALSE(contents.complete);
            EXPECT_NE(contents.damage.find("not finished"), std::string::npos) << contents.damage;
            EXPECT_EQ(contents.events.size(), writer.eventsWritten());
            EXPECT_TRUE(std::equal(contents.events.begin(), contents.events.end(), events.begin(),
                                   events.begin() + static_cast<std::ptrdiff_t>(emitted)))
                << "every event emitted so far";
            EXPECT_EQ(contents.intactSteps, writer.stepsWritten());
        }
    }
    EXPECT_GT(stepEnds, 5);
    writer.finish();
    const SessionContents contents = SessionReader::read(path);
    EXPECT_TRUE(contents.complete) << contents.damage;
    EXPECT_EQ(contents.damage, "");
    EXPECT_TRUE(contents.events == events);
    EXPECT_TRUE(contents.metadata == sampleMetadata());
    EXPECT_EQ(contents.fileBytes, writer.bytesWritten());
    EXPECT_GT(contents.payloadBytes, contents.fileBytes / 2); // at least the events' fixed fields
    EXPECT_EQ(std::filesystem::file_size(path), writer.bytesWritten());
}

TEST(SessionWriterTest, BothWaysOfWritingMakeTheSameFile) {
    TemporaryFolder folder;
    // Past two snapshots and several column blocks, so that every kind of chunk goes through the thread.
    const std::vector<Event> events = everyKindSession(2 * SessionFormat::kSnapshotInterval + 40, 3);
    std::vector<std::vector<char>> files;
    for (ChunkWriting writing : {ChunkWriting::CallersThread, ChunkWriting::Background}) {
        const auto path =
            folder.file(writing == ChunkWriting::Background ? "thread.kvsess" : "caller.kvsess");
        SessionWriter writer(path, sampleMetadata(), writing);
        writer.setColumnBlockSteps(64);
        for (const Event& event : events) {
            writer.emit(event);
        }
        writer.finish();
        std::ifstream in(path, std::ios::binary);
        files.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    EXPECT_GT(files.front().size(), 10'000u);
    EXPECT_TRUE(files.front() == files.back()) << "the background thread wrote other bytes";
    EXPECT_TRUE(SessionReader::read(folder.file("thread.kvsess")).events == events);
}

TEST(SessionWriterTest, ABackgroundWriteFailureReachesTheCallerAndKeepsTheStepsWritten) {
    TemporaryFolder folder;
    const auto path = folder.file("full.kvsess");
    const std::vector<Event> events = everyKindSession(400, 3);
    std::string failure;
    {
        const kvscope::testing::FileSizeLimit limit(16 * 1024);
        SessionWriter writer(path, sampleMetadata(), ChunkWriting::Background);
        try {
            for (const Event& event : events) {
                writer.emit(event);
            }
            writer.finish();
        } catch (const SessionError& error) {
            failure = error.what();
        }
        EXPECT_THROW(writer.flushStep(), SessionError) << "the failure stays";
    } // the destructor does not throw
    EXPECT_NE(failure.find("cannot write session file " + path.string()), std::string::npos) << failure;
    const SessionContents contents = SessionReader::read(path);
    EXPECT_FALSE(contents.complete);
    EXPECT_GT(contents.intactSteps, 2);
    ASSERT_LT(contents.events.size(), events.size());
    EXPECT_TRUE(std::equal(contents.events.begin(), contents.events.end(), events.begin()))
        << "the steps before the failure read back as emitted";
}

TEST(SessionWriterTest, DestructorFinishesTheFile) {
    TemporaryFolder folder;
    const auto path = folder.file("scoped.kvsess");
    const std::vector<Event> events = everyKindSession(5, 2);
    {
        SessionWriter writer(path, sampleMetadata());
        for (const Event& event : events) {
            writer.emit(event);
        }
    }
    const SessionContents contents = SessionReader::read(path);
    EXPECT_TRUE(contents.complete) << contents.damage;
    EXPECT_TRUE(contents.events == events);
}

// An attached server's session past the snapshot interval: seeking to a late step still finds the server's cache
// (and a serving session its pool), which a snapshot would have lost.
TEST(SessionWriterTest, ASessionWithAServerOrAPoolSeeksToAnyStep) {
    TemporaryFolder folder;
    const auto path = folder.file("attached.kvsess");
    const std::int64_t steps = SessionFormat::kSnapshotInterval + 44;
    {
        SessionWriter writer(path, sampleMetadata());
        for (std::int64_t step = 0; step < steps; ++step) {
            writer.emit(Event{step, -1, 0,
                              ServerCacheEvent{ServerCacheChange::Stored, step > 0, 0,
                                               {static_cast<std::uint64_t>(step) + 1}, static_cast<std::uint64_t>(step),
                                               {step}, 1, "GPU", "", {}}});
            writer.emit(Event{step, -1, 0, PagedPoolEvent{16, 8 + static_cast<std::int32_t>(step), -1, true, 0, {0}, 64, 4}});
        }
    }
    for (const std::int64_t step : {std::int64_t{3}, SessionFormat::kSnapshotInterval, steps - 1}) {
        const StepState state = SessionReader::stateAt(path, step);
        EXPECT_EQ(state.server.blocks.size(), static_cast<std::size_t>(step) + 1) << step;
        EXPECT_EQ(state.paged.numBlocks, 8 + step) << step;
    }
}

TEST(SessionWriterTest, RefusesEventsAfterFinishAndUnwritablePaths) {
    TemporaryFolder folder;
    SessionWriter writer(folder.file("done.kvsess"), sampleMetadata());
    writer.finish();
    EXPECT_THROW(writer.emit(Event{0, 0, 0, ResetEvent{}}), SessionError);
    try {
        SessionWriter missing(folder.file("no/such/folder/x.kvsess"), sampleMetadata());
        FAIL() << "a file in a missing folder was created";
    } catch (const SessionError& error) {
        EXPECT_NE(std::string(error.what()).find("no/such/folder/x.kvsess"), std::string::npos) << error.what();
    }
}

TEST(SessionWriterTest, SaveReplacesAtomicallyAndKeepsTheOldFileOnFailure) {
    TemporaryFolder folder;
    const auto path = folder.file("saved.kvsess");
    const std::vector<Event> first = everyKindSession(6, 2);
    SessionWriter::save(path, sampleMetadata(), first);
    EXPECT_TRUE(SessionReader::read(path).events == first);
    EXPECT_FALSE(std::filesystem::exists(folder.file("saved.kvsess.tmp")));

    const std::vector<Event> second = everyKindSession(9, 3);
    SessionWriter::save(path, sampleMetadata(), second);
    EXPECT_TRUE(SessionReader::read(path).events == second);

    // The temporary file cannot be created inside a directory with that name: the old file stays.
    std::filesystem::create_directories(folder.file("saved.kvsess.tmp"));
    EXPECT_THROW(SessionWriter::save(path, sampleMetadata(), first), SessionError);
    EXPECT_TRUE(SessionReader::read(path).events == second);
}

TEST(SessionWriterTest, EventsOlderThanTheNewestStepAreFiledUnderIt) {
    TemporaryFolder folder;
    const auto path = folder.file("late.kvsess");
    const std::vector<Event> events{
        Event{0, 0, 0, UpdateEvent{4, 4, 4, -1, 4, 16, LayerKind::Dynamic}},
        Event{2, 0, 1, UpdateEvent{1, 5, 5, -1, 5, 20, LayerKind::Dynamic}},
        Event{1, 0, 2, MaskSizesEvent{1, 5, 0}}, // late: belongs to step 2 as Timeline files it
        Event{-3, -1, 3, MemoryEvent{20, 0, 0}},
    };
    SessionWriter::save(path, sampleMetadata(), events);
    const SessionContents contents = SessionReader::read(path);
    EXPECT_TRUE(contents.events == events);
    EXPECT_EQ(contents.intactSteps, 2); // steps 0 and 2; step 1 had no events
    const Timeline live = timelineOf(events);
    for (std::int64_t step = 0; step < live.stepCount(); ++step) {
        EXPECT_TRUE(SessionReader::stateAt(path, step) == live.stateAt(step)) << step;
    }
}

TEST(SessionWriterTest, SnapshotsLetStateAtSeekToAnyStep) {
    TemporaryFolder folder;
    const auto path = folder.file("long.kvsess");
    const std::int64_t tokens = 2 * SessionFormat::kSnapshotInterval + 40;
    const std::vector<Event> events = everyKindSession(tokens, 3);
    SessionWriter::save(path, sampleMetadata(), events);
    const Timeline live = timelineOf(events);
    for (std::int64_t step : {std::int64_t{0}, std::int64_t{1}, SessionFormat::kSnapshotInterval - 1,
                              SessionFormat::kSnapshotInterval, SessionFormat::kSnapshotInterval + 1,
                              2 * SessionFormat::kSnapshotInterval + 3, live.stepCount() - 1}) {
        EXPECT_TRUE(SessionReader::stateAt(path, step) == live.stateAt(step)) << step;
    }
    EXPECT_THROW(SessionReader::stateAt(path, live.stepCount()), SessionError);
    EXPECT_THROW(SessionReader::stateAt(path, -1), SessionError);
}

TEST_P(SessionWriterWritingTest, AProcessKilledMidSessionLeavesEveryStepButTheOneInFlight) {
    TemporaryFolder folder;
    const auto path = folder.file("killed.kvsess");
    const std::vector<Event> events = everyKindSession(30, 4);
    // The first step from 17 on that has a StepEnd (irregular sessions skip some steps).
    std::int64_t killInStep = -1;
    std::int64_t filedStep = 0;
    for (const Event& event : events) {
        filedStep = std::max(filedStep, event.step);
        if (filedStep >= 17 && event.kind() == EventKind::StepEnd) {
            killInStep = filedStep;
            break;
        }
    }
    ASSERT_GE(killInStep, 17);
    const std::vector<Event> kept = eventsThroughStep(events, killInStep - 1);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        SessionWriter writer(path, sampleMetadata(), GetParam());
        std::int64_t filed = 0;
        for (const Event& event : events) {
            filed = std::max(filed, event.step);
            if (filed == killInStep && event.kind() == EventKind::StepEnd) {
                // The writer's thread writes the steps before on its own, without a flush: give it the few
                // milliseconds it takes (bounded, so that a thread that never writes fails the test).
                for (int waited = 0; writer.eventsWritten() < kept.size() && waited < 10'000; ++waited) {
                    std::this_thread::sleep_for(std::chrono::milliseconds(1));
                }
                ::raise(SIGKILL); // mid-step: this step's events are buffered, its StepEnd never written
            }
            writer.emit(event);
        }
        ::_exit(3);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status));
    ASSERT_EQ(WTERMSIG(status), SIGKILL);

    const SessionContents contents = SessionReader::read(path);
    EXPECT_FALSE(contents.complete);
    EXPECT_TRUE(contents.events == kept);
    EXPECT_LT(timelineOf(contents.events).stepCount(), killInStep + 1);
    EXPECT_GE(timelineOf(contents.events).stepCount(), 17);
    EXPECT_NE(contents.damage.find("steps intact"), std::string::npos) << contents.damage;
}
