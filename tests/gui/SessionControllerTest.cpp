// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/session/SessionController.h"

#include "FileSizeLimit.h"
#include "GuiTestHelpers.h"
#include "kvscope/gui/session/SyntheticEngine.h"
#include "kvscope/synthetic/SyntheticSession.h"
#include "kvscope/trace/RecordingSink.h"
#include "kvscope/trace/SessionReader.h"

#include <QFileInfo>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <chrono>
#include <stdexcept>
#include <thread>

namespace kvscope::gui {
namespace {

using testing::waitUntil;

TEST(SessionControllerTest, ReplayLoadsAndNavigates) {
    SessionController session;
    QSignalSpy loaded(&session, &SessionController::sessionLoaded);
    QSignalSpy stepped(&session, &SessionController::stepChanged);
    EXPECT_EQ(session.mode(), SessionController::Mode::Empty);
    EXPECT_NE(session.state(), nullptr);
    testing::loadSynthetic(session, testing::smallSession(20));
    EXPECT_EQ(loaded.count(), 1);
    EXPECT_EQ(session.mode(), SessionController::Mode::Replay);
    EXPECT_EQ(session.stepCount(), 21);
    EXPECT_EQ(session.currentStep(), 0);
    EXPECT_EQ(session.state()->layers.size(), 8u);

    stepped.clear();
    session.stepForward();
    session.stepForward();
    EXPECT_EQ(session.currentStep(), 2);
    EXPECT_EQ(session.state()->step, 2);
    EXPECT_EQ(*session.state(), session.timeline().stateAt(2));
    session.stepBackward();
    EXPECT_EQ(session.currentStep(), 1);
    session.goToEnd();
    EXPECT_EQ(session.currentStep(), 20);
    session.stepForward(); // a finished replay stays at its end
    EXPECT_EQ(session.currentStep(), 20);
    session.setCurrentStep(-5);
    EXPECT_EQ(session.currentStep(), 0);
    session.setCurrentStep(1000);
    EXPECT_EQ(session.currentStep(), 20);
    EXPECT_EQ(stepped.count(), 6);
    EXPECT_EQ(session.previousState()->step, 19);
}

TEST(SessionControllerTest, BadFilesAndEmptySessionsSayWhy) {
    SessionController session;
    QTemporaryDir dir;
    const QString missing = dir.filePath("missing.kvs");
    EXPECT_FALSE(session.openFile(missing).isEmpty());
    QFile junk(dir.filePath("junk.kvs"));
    ASSERT_TRUE(junk.open(QIODevice::WriteOnly));
    junk.write("this is not a session file");
    junk.close();
    EXPECT_FALSE(session.openFile(junk.fileName()).isEmpty());
    EXPECT_EQ(session.mode(), SessionController::Mode::Empty) << "a failed open keeps the old session";
    EXPECT_TRUE(session.saveAs(dir.filePath("x.kvs")).contains("no session"));
    EXPECT_TRUE(session.exportPerfetto(dir.filePath("x.json")).contains("no session"));
}

TEST(SessionControllerTest, SaveThenOpenGivesTheSameTimeline) {
    SessionController session;
    testing::loadSynthetic(session, testing::smallSession(16, true));
    QTemporaryDir dir;
    const QString path = dir.filePath("round.kvs");
    ASSERT_EQ(session.saveAs(path), QString());
    const std::vector<trace::Event> saved(session.timeline().events().begin(), session.timeline().events().end());
    SessionController reopened;
    ASSERT_EQ(reopened.openFile(path), QString());
    EXPECT_EQ(reopened.stepCount(), session.stepCount());
    EXPECT_EQ(reopened.timeline().stateAt(10), session.timeline().stateAt(10));
    EXPECT_EQ(reopened.metadata().model, session.metadata().model);
    EXPECT_EQ(reopened.metadata().cacheKind, session.metadata().cacheKind);
    EXPECT_EQ(reopened.metadata().prompt, session.metadata().prompt);
    EXPECT_EQ(session.exportPerfetto(dir.filePath("trace.json")), QString());
    EXPECT_GT(QFileInfo(dir.filePath("trace.json")).size(), 100);
}

TEST(SessionControllerTest, OpensFilesInTheBackground) {
    QTemporaryDir dir;
    SessionController source;
    testing::loadSynthetic(source, testing::smallSession(12));
    const QString path = dir.filePath("background.kvsess");
    ASSERT_EQ(source.saveAs(path), QString());
    SessionController session;
    QSignalSpy opened(&session, &SessionController::fileOpened);
    session.openFileInBackground(dir.filePath("missing.kvsess"));
    session.openFileInBackground(path); // supersedes the first request
    ASSERT_TRUE(waitUntil([&] { return opened.count() >= 1; }));
    QTest::qWait(50);
    ASSERT_EQ(opened.count(), 1);
    EXPECT_EQ(opened.front().at(0).toString(), path);
    EXPECT_EQ(opened.front().at(1).toString(), QString());
    EXPECT_EQ(session.stepCount(), 13);
    session.openFileInBackground(dir.filePath("missing.kvsess"));
    ASSERT_TRUE(waitUntil([&] { return opened.count() == 2; }));
    EXPECT_FALSE(opened.back().at(1).toString().isEmpty());
    EXPECT_EQ(session.stepCount(), 13) << "a failed open keeps the session";
}

TEST(SessionControllerTest, LiveRunDeliversBatchesAndFollowsTheTail) {
    SessionController session(testing::syntheticFactory());
    ASSERT_TRUE(session.canRunLive());
    QSignalSpy grew(&session, &SessionController::sessionGrew);
    kvscope::config::RunSettings settings;
    settings.tokens = 12;
    session.startLive(settings, SessionController::Generation::ToTheEnd);
    EXPECT_EQ(session.mode(), SessionController::Mode::Live);
    ASSERT_TRUE(waitUntil([&] { return session.liveFinished() || session.stepCount() >= 12; }));
    ASSERT_TRUE(waitUntil([&] { return !session.liveBusy(); }));
    session.waitForEngine();
    EXPECT_EQ(session.stepCount(), 12);
    EXPECT_GE(grew.count(), 1);
    EXPECT_EQ(session.currentStep(), 11) << "follows the newest step";
    EXPECT_EQ(*session.state(), session.timeline().stateAt(11)) << "the engine's snapshot equals the replayed state";
    EXPECT_EQ(session.metadata().model, "synthetic 8 layers");
}

// What a live run of these settings records: the synthetic engine's events, generated directly.
std::vector<trace::Event> syntheticEvents(const kvscope::config::RunSettings& settings) {
    trace::RecordingSink sink;
    synthetic::SyntheticSession::generate(SyntheticEngine::optionsFor(settings), sink);
    return sink.takeEvents();
}

trace::Timeline inMemory(const std::vector<trace::Event>& events) {
    trace::Timeline timeline;
    timeline.emitAll(events);
    return timeline;
}

void runToTheEnd(SessionController& session, const kvscope::config::RunSettings& settings) {
    session.startLive(settings, SessionController::Generation::ToTheEnd);
    ASSERT_TRUE(waitUntil([&] { return session.liveFinished() && !session.liveBusy(); }, 60000));
    session.waitForEngine();
}

TEST(SessionControllerTest, ALiveRunIsRecordedToItsFileAndReadBackFromIt) {
    QTemporaryDir dir;
    SessionController session(testing::syntheticFactory());
    session.setLiveFolder(dir.filePath("live"));
    kvscope::config::RunSettings settings;
    settings.tokens = 600; // more steps than the timeline keeps decoded
    runToTheEnd(session, settings);
    ASSERT_EQ(session.stepCount(), 600);
    const QString file = session.liveFile();
    ASSERT_FALSE(file.isEmpty());
    EXPECT_EQ(QFileInfo(file).absolutePath(), QFileInfo(dir.filePath("live")).absoluteFilePath());
    EXPECT_TRUE(QFileInfo::exists(file));

    const trace::Timeline& timeline = session.timeline();
    EXPECT_TRUE(timeline.fileBacked());
    EXPECT_TRUE(timeline.events().empty()) << "the events are in the file, not in memory";
    const std::vector<trace::Event> events = syntheticEvents(settings);
    const trace::Timeline memory = inMemory(events);
    for (std::int64_t step = 0; step < memory.stepCount(); ++step) {
        ASSERT_EQ(timeline.stateAt(step), memory.stateAt(step)) << "step " << step;
    }
    EXPECT_EQ(timeline.frameCache()->size(), trace::Timeline::kDefaultCachedSteps)
        << "600 steps read back, at most the cache's worth decoded at once";

    // The finished run's file is a finished session file; Save As keeps a copy.
    const trace::SessionContents recorded = trace::SessionReader::read(file.toStdString());
    EXPECT_TRUE(recorded.complete) << recorded.damage;
    EXPECT_EQ(recorded.events, events);
    EXPECT_EQ(recorded.metadata.model, "synthetic 8 layers");
    const QString kept = dir.filePath("kept.kvsess");
    ASSERT_EQ(session.saveAs(kept), QString());
    EXPECT_EQ(trace::SessionReader::read(kept.toStdString()).events, events);

    // A new session closes the run: its file goes, the saved copy stays.
    session.startLive(settings, SessionController::Generation::OnRequest);
    ASSERT_TRUE(waitUntil([&] { return !session.liveBusy(); }));
    session.waitForEngine();
    EXPECT_FALSE(QFileInfo::exists(file));
    EXPECT_NE(session.liveFile(), file);
    EXPECT_TRUE(QFileInfo::exists(session.liveFile()));
    EXPECT_TRUE(QFileInfo::exists(kept));
    const QString second = session.liveFile();
    ASSERT_EQ(session.openFile(kept), QString());
    EXPECT_FALSE(QFileInfo::exists(second)) << "opening a file closes the live run too";
    EXPECT_EQ(session.stepCount(), 600);
}

TEST(SessionControllerTest, TwoLiveRunsStartedTogetherRecordToTwoFiles) {
    // Compare mode starts two live runs at once: with one file name per millisecond and process, the second
    // truncated the first's file under it (MainWindowTest saw "a chunk of ... bytes does not fit").
    QTemporaryDir dir;
    SessionController first(testing::syntheticFactory());
    SessionController second(testing::syntheticFactory());
    first.setLiveFolder(dir.filePath("live"));
    second.setLiveFolder(dir.filePath("live"));
    kvscope::config::RunSettings settings;
    settings.tokens = 40;
    first.startLive(settings, SessionController::Generation::ToTheEnd);
    second.startLive(settings, SessionController::Generation::ToTheEnd);
    ASSERT_TRUE(waitUntil([&] {
        return first.liveFinished() && second.liveFinished() && !first.liveBusy() && !second.liveBusy();
    }));
    first.waitForEngine();
    second.waitForEngine();
    EXPECT_NE(first.liveFile(), second.liveFile());
    const trace::Timeline memory = inMemory(syntheticEvents(settings));
    for (const SessionController* session : {&first, &second}) {
        ASSERT_EQ(session->stepCount(), 40);
        for (std::int64_t step = 0; step < 40; ++step) {
            ASSERT_EQ(session->timeline().stateAt(step), memory.stateAt(step)) << "step " << step;
        }
    }
}

TEST(SessionControllerTest, LiveRunsAreRecordedInTheUsersCacheFolderByDefault) {
    // ~/.cache/kvscope/live, as the docs say (beside scripts/train-presets.sh's ~/.cache/kvscope/train), not
    // the application's own ~/.cache/<organisation>/<application>.
    const SessionController session;
    EXPECT_EQ(session.liveFolder(),
              QStandardPaths::writableLocation(QStandardPaths::GenericCacheLocation) + "/kvscope/live");
}

TEST(SessionControllerTest, ALiveRunWhoseFolderCannotBeMadeIsHeldInMemory) {
    QTemporaryDir dir;
    QFile blocker(dir.filePath("file"));
    ASSERT_TRUE(blocker.open(QIODevice::WriteOnly));
    blocker.close();
    SessionController session(testing::syntheticFactory());
    session.setLiveFolder(dir.filePath("file/live")); // a folder inside a plain file
    kvscope::config::RunSettings settings;
    settings.tokens = 20;
    runToTheEnd(session, settings);
    EXPECT_TRUE(session.liveFile().isEmpty());
    EXPECT_FALSE(session.liveFailure().has_value());
    EXPECT_FALSE(session.timeline().fileBacked());
    ASSERT_EQ(session.stepCount(), 20);
    EXPECT_EQ(session.timeline().stateAt(19), inMemory(syntheticEvents(settings)).stateAt(19));
}

TEST(SessionControllerTest, ALiveRunWhoseFileCannotGrowStopsAndSaysWhyKeepingItsSteps) {
    QTemporaryDir dir;
    SessionController session(testing::syntheticFactory());
    session.setLiveFolder(dir.filePath("live"));
    kvscope::config::RunSettings settings;
    settings.tokens = 600;
    {
        const kvscope::testing::FileSizeLimit limit(24 * 1024);
        runToTheEnd(session, settings);
    }
    ASSERT_TRUE(session.liveFailure().has_value());
    EXPECT_EQ(session.liveFailure()->stage, LiveFailure::Stage::Step);
    EXPECT_TRUE(session.liveFailure()->reason.contains("could not record the live session"))
        << session.liveFailure()->reason.toStdString();
    EXPECT_TRUE(session.liveFailure()->reason.contains(session.liveFile())) << "names the file";
    const std::int64_t kept = session.stepCount();
    EXPECT_GT(kept, 1);
    EXPECT_LT(kept, 600);
    const trace::Timeline memory = inMemory(syntheticEvents(settings));
    for (std::int64_t step = 0; step < kept - 1; ++step) {
        ASSERT_EQ(session.timeline().stateAt(step), memory.stateAt(step)) << "step " << step;
    }
    session.setCurrentStep(kept / 2);
    EXPECT_EQ(session.currentStep(), kept / 2) << "the recorded steps stay viewable";
}

TEST(SessionControllerTest, SteppingPastTheEndOfALiveRunAsksForOneMoreToken) {
    SessionController session(testing::syntheticFactory());
    kvscope::config::RunSettings settings;
    settings.tokens = 30;
    session.startLive(settings, SessionController::Generation::OnRequest);
    ASSERT_TRUE(waitUntil([&] { return session.stepCount() == 1; }));
    session.waitForEngine();
    EXPECT_EQ(session.stepCount(), 1) << "prefill only until asked";
    session.stepForward();
    session.stepForward();
    session.stepForward();
    ASSERT_TRUE(waitUntil([&] { return session.stepCount() >= 4; }));
    session.waitForEngine();
    EXPECT_EQ(session.stepCount(), 4);
    EXPECT_EQ(session.currentStep(), 3);
    EXPECT_FALSE(session.liveFinished());
    session.runToEnd();
    ASSERT_TRUE(waitUntil([&] { return session.liveFinished(); }));
    session.waitForEngine();
    EXPECT_EQ(session.stepCount(), 30);
    EXPECT_EQ(session.currentStep(), 29);
}

// A synthetic engine slow enough to be cancelled mid-run.
class SlowEngine final : public SessionEngine {
public:
    explicit SlowEngine(const kvscope::config::RunSettings& settings) : m_inner(SyntheticEngine::optionsFor(settings)) {}
    void start(trace::EventSink& sink) override { m_inner.start(sink); }
    bool step() override {
        std::this_thread::sleep_for(std::chrono::milliseconds(15));
        return m_inner.step();
    }
    bool finished() const override { return m_inner.finished(); }
    std::int64_t generatedCount() const override { return m_inner.generatedCount(); }
    trace::SessionMetadata metadata() const override { return m_inner.metadata(); }

private:
    SyntheticEngine m_inner;
};

TEST(SessionControllerTest, CancelStopsALongRunAfterTheStepInFlight) {
    SessionController session(
        [](const kvscope::config::RunSettings& settings) -> std::unique_ptr<SessionEngine> { return std::make_unique<SlowEngine>(settings); });
    kvscope::config::RunSettings settings;
    settings.tokens = 500;
    session.startLive(settings, SessionController::Generation::ToTheEnd);
    ASSERT_TRUE(waitUntil([&] { return session.stepCount() >= 3; }));
    EXPECT_TRUE(session.liveBusy());
    session.cancelRun();
    ASSERT_TRUE(waitUntil([&] { return !session.liveBusy(); }));
    session.waitForEngine();
    const std::int64_t stopped = session.stepCount();
    EXPECT_LT(stopped, 20);
    EXPECT_FALSE(session.liveFinished());
    QTest::qWait(100);
    EXPECT_EQ(session.stepCount(), stopped) << "nothing runs after a cancel";
}

TEST(SessionControllerTest, AFailingEngineReportsItsMessage) {
    SessionController session([](const kvscope::config::RunSettings& settings) -> std::unique_ptr<SessionEngine> {
        throw std::runtime_error("unknown preset `" + settings.preset + "` (allowed: llama)");
    });
    QSignalSpy errors(&session, &SessionController::errorOccurred);
    kvscope::config::RunSettings settings;
    settings.preset = "nope";
    session.startLive(settings, SessionController::Generation::ToTheEnd);
    ASSERT_TRUE(waitUntil([&] { return errors.count() > 0; }));
    EXPECT_EQ(errors.front().front().toString(), "unknown preset `nope` (allowed: llama)");
    EXPECT_TRUE(session.liveFinished());
    EXPECT_EQ(session.stepCount(), 0);
}

TEST(SessionControllerTest, AFailureSaysWhereTheRunStoppedUntilTheNextSession) {
    struct Case {
        testing::FailAt at;
        std::int64_t step;
        LiveFailure::Stage stage;
        std::int64_t steps;
        const char* headline;
    };
    const std::vector<Case> cases = {
        {testing::FailAt::Loading, 0, LiveFailure::Stage::Loading, 0,
         "The live session could not start"},
        {testing::FailAt::Prefill, 0, LiveFailure::Stage::Prefill, 0,
         "The live session failed at its prefill (step 0)"},
        {testing::FailAt::Step, 3, LiveFailure::Stage::Step, 3, "The live session failed at step 3"},
    };
    for (const Case& test : cases) {
        SessionController session(testing::failingFactory(test.at, "the engine's reason", test.step));
        QSignalSpy errors(&session, &SessionController::errorOccurred);
        kvscope::config::RunSettings settings;
        settings.tokens = 10;
        session.startLive(settings, SessionController::Generation::ToTheEnd);
        EXPECT_FALSE(session.liveFailure().has_value());
        ASSERT_TRUE(waitUntil([&] { return errors.count() > 0; })) << test.headline;
        ASSERT_TRUE(session.liveFailure().has_value());
        EXPECT_EQ(session.liveFailure()->stage, test.stage);
        EXPECT_EQ(session.liveFailure()->step, test.steps);
        EXPECT_EQ(session.liveFailure()->reason, "the engine's reason");
        EXPECT_EQ(session.liveFailure()->headline(), test.headline);
        EXPECT_EQ(session.stepCount(), test.steps) << "the steps that ran are in the session";
        EXPECT_TRUE(session.liveFinished());
        session.startLive(settings, SessionController::Generation::OnRequest);
        EXPECT_FALSE(session.liveFailure().has_value()) << "a new session starts clean";
        testing::loadSynthetic(session, testing::smallSession(5));
        EXPECT_FALSE(session.liveFailure().has_value());
    }
}

TEST(SessionControllerTest, ANewRunDropsTheOldOnesBatches) {
    SessionController session(testing::syntheticFactory());
    kvscope::config::RunSettings first;
    first.tokens = 400;
    session.startLive(first, SessionController::Generation::ToTheEnd);
    kvscope::config::RunSettings second;
    second.tokens = 5;
    second.cache.kind = kvscope::config::CacheKind::Offloaded;
    session.startLive(second, SessionController::Generation::ToTheEnd);
    ASSERT_TRUE(waitUntil([&] { return session.liveFinished() || session.stepCount() >= 5; }));
    session.waitForEngine();
    EXPECT_EQ(session.stepCount(), 5);
    EXPECT_EQ(session.metadata().cacheKind, "offloaded");
}

TEST(SessionControllerTest, WithoutAnEngineLiveRunsAreRefused) {
    SessionController session;
    QSignalSpy errors(&session, &SessionController::errorOccurred);
    session.startLive(kvscope::config::RunSettings{}, SessionController::Generation::ToTheEnd);
    EXPECT_EQ(errors.count(), 1);
    EXPECT_EQ(session.mode(), SessionController::Mode::Empty);
}

} // namespace
} // namespace kvscope::gui
