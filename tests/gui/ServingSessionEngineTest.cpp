// SPDX-License-Identifier: GPL-3.0-or-later
// kvscope's serving engine (gui/app/ServingSessionEngine, LibTorch): a workload served step by step on the
// llama preset, its events arriving in the window; cancelling stops it; a bad workload or pool leaves a
// window that says why. And the walk: a chat behind a shared system prompt shows blocks shared,
// cached, evicted and a request preempted, each in a sentence of the event log, and its saved session
// replays to the same events.
#include "ServingSessionEngine.h"

#include "GuiTestHelpers.h"
#include "kvscope/gui/models/EventLogModel.h"
#include "kvscope/gui/models/ServingSummary.h"
#include "kvscope/gui/session/SessionController.h"
#include "kvscope/gui/views/EventLogView.h"
#include "kvscope/gui/views/OccupancyMapView.h"
#include "kvscope/gui/views/SessionFailurePanel.h"
#include "kvscope/gui/window/MainWindow.h"
#include "kvscope/gui/window/NewSessionDialog.h"
#include "kvscope/gui/window/TransportBar.h"
#include "kvscope/trace/RecordingSink.h"

#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QGroupBox>
#include <QPushButton>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>
#include <gtest/gtest.h>
#include <map>

namespace kvscope::gui {
namespace {

EngineCapabilities capabilities() {
    EngineCapabilities result;
    result.presets = {"llama"};
    result.defaultPreset = "llama";
    return result;
}

SessionEngineFactory servingFactory() {
    return [](const config::RunSettings& settings) -> std::unique_ptr<SessionEngine> {
        return std::make_unique<app::ServingSessionEngine>(settings);
    };
}

config::RunSettings servingSettings(config::ServingSettings serving) {
    config::RunSettings settings;
    settings.preset = "llama";
    settings.tokens = 1 << 20;
    settings.serving = std::move(serving);
    return settings;
}

std::map<trace::EventKind, int> countKinds(std::span<const trace::Event> events) {
    std::map<trace::EventKind, int> counts;
    for (const trace::Event& event : events) {
        ++counts[event.kind()];
    }
    return counts;
}

// The design document's example (blocks of 4, a pool of 10): six steps, r2's admission evicts block 3.
TEST(ServingSessionEngineTest, ServesAWorkloadAStepAtATime) {
    app::ServingSessionEngine engine(
        servingSettings({"prefix-caching-example", 4, 10, 256, 8, true, "document"}));
    EXPECT_EQ(engine.metadata().cacheKind, "paged");
    EXPECT_NE(engine.metadata().cacheSettingsJson.find("\"num_blocks\":10"), std::string::npos);
    trace::RecordingSink sink;
    engine.start(sink);
    EXPECT_FALSE(engine.finished());
    auto counts = countKinds(sink.events());
    EXPECT_EQ(counts[trace::EventKind::PagedPool], 1);
    EXPECT_EQ(counts[trace::EventKind::StepBegin], 1) << "start() is step 0";
    EXPECT_EQ(counts[trace::EventKind::RequestArrived], 1) << "r0 arrives at step 0";
    EXPECT_EQ(counts[trace::EventKind::BlockAllocated], 4) << "r0's 15 prompt tokens take 4 blocks of 4";
    int steps = 1;
    while (engine.step()) {
        ++steps;
    }
    EXPECT_EQ(steps, 6);
    EXPECT_TRUE(engine.finished());
    EXPECT_EQ(engine.generatedCount(), 5);
    EXPECT_FALSE(engine.step()) << "nothing left to do";
    counts = countKinds(sink.events());
    EXPECT_EQ(counts[trace::EventKind::StepBegin], 6);
    EXPECT_EQ(counts[trace::EventKind::RequestFinished], 3);
    EXPECT_EQ(counts[trace::EventKind::BlockEvicted], 1);
    EXPECT_EQ(counts[trace::EventKind::BlockTouched], 5) << "r1 reuses 2 blocks, r2 3";
}

// In the window: steps arrive as the user steps, and Cancel stops the run where it is.
TEST(ServingSessionEngineTest, StepsArriveInTheWindowAndCancelStopsTheRun) {
    MainWindow window(servingFactory(), capabilities());
    window.resize(1200, 800);
    window.show();
    window.startLive(servingSettings({"chat-shared-system-prompt", 16, 64, 256, 8, true, "document"}));
    window.transport()->setPlaying(false);
    ASSERT_TRUE(testing::waitUntil([&] { return window.session().stepCount() >= 1; }, 60000));
    EXPECT_TRUE(testing::waitUntil([&] { return window.showsServingViews(); }, 10000))
        << "the pool's views show";
    window.session().stepForward();
    window.session().stepForward();
    ASSERT_TRUE(testing::waitUntil([&] { return window.session().stepCount() >= 3; }, 60000));
    EXPECT_EQ(window.session().paged().requestIds().front(), "user0");
    EXPECT_FALSE(window.session().liveFinished());
    window.session().runToEnd();
    window.session().cancelRun();
    window.session().waitForEngine();
    const std::int64_t stopped = window.session().stepCount();
    EXPECT_LT(stopped, 20) << "the chat takes more steps than were run";
    EXPECT_FALSE(window.session().liveFailure().has_value());
    QTest::qWait(200);
    window.session().waitForEngine();
    EXPECT_EQ(window.session().stepCount(), stopped) << "nothing runs after Cancel";
}

// A workload that does not exist, or a pool that cannot serve it, fails to start with the engine's reason
// over the map; the window stays usable.
TEST(ServingSessionEngineTest, ABadWorkloadOrPoolSaysWhyInAUsableWindow) {
    struct Case {
        config::ServingSettings serving;
        const char* reason;
    };
    const Case cases[] = {
        {{"no-such-workload", 16, 64, 256, 8, true, "document"}, "no-such-workload"},
        {{"prefix-caching-example", 4, 1, 256, 8, true, "current"}, "raise --num-blocks"},
        {{"prefix-caching-example", 4, 10, 256, 8, true, "lru"},
         "free policy `lru` is unknown: allowed document, current"},
    };
    for (const Case& test : cases) {
        MainWindow window(servingFactory(), capabilities());
        window.resize(1200, 800);
        window.show();
        window.startLive(servingSettings(test.serving));
        ASSERT_TRUE(testing::waitUntil([&] { return window.session().liveFailure().has_value(); }, 60000))
            << test.reason;
        const SessionFailurePanel* panel = window.occupancyMap()->failurePanel();
        EXPECT_TRUE(panel->isVisible()) << test.reason;
        EXPECT_EQ(panel->headline(), "The live session could not start") << test.reason;
        EXPECT_TRUE(panel->reason().contains(QString::fromUtf8(test.reason)))
            << panel->reason().toStdString();
        // Usable: another serving session runs in the same window.
        window.startLive(servingSettings({"prefix-caching-example", 4, 10, 256, 8, true, "document"}));
        window.session().runToEnd();
        ASSERT_TRUE(testing::waitUntil([&] { return window.session().liveFinished(); }, 60000))
            << test.reason;
        EXPECT_FALSE(window.session().liveFailure().has_value());
        EXPECT_EQ(window.session().stepCount(), 6);
        EXPECT_FALSE(panel->isVisible());
    }
}

// The issue's "done when", as a new user walks it: File > New session > Serving, "chat with a shared system
// prompt" picked with the pool the dialog fills in for it (the workload's own suggestion, 28 blocks of 16,
// small enough to run short; nothing typed), stepped to the end. `kvscope-cli serve --workload
// chat-shared-system-prompt` (which takes the same suggested pool) counts 26 steps, 5 evictions, 1 preemption
// and 28 blocks at the peak: the window reads the same from the events. Blocks shared (a hit on a block
// another request holds), cached, evicted and a request preempted each occur and each has its sentence in
// the event log; the session saved and opened again replays to the same events, step by step the same pool
// and the same sentences.
TEST(ServingSessionEngineTest, AChatBehindASharedSystemPromptIsExplainedAndReplaysIdentically) {
    QTemporaryDir dir;
    MainWindow window(servingFactory(), capabilities());
    window.resize(1600, 1000);
    window.show();
    // The dialog as a user drives it: Serving checked, another workload picked and then the chat, Start.
    QString suggested;
    int shownBlocks = 0;
    QTimer::singleShot(0, [&] {
        auto* dialog = qobject_cast<NewSessionDialog*>(QApplication::activeModalWidget());
        if (!dialog) {
            return;
        }
        dialog->servingBox()->setChecked(true);
        QComboBox* workloads = dialog->workloadBox();
        workloads->setCurrentIndex(workloads->findText(QStringLiteral("rag-shared-document")));
        workloads->setCurrentIndex(workloads->findText(QStringLiteral("chat-shared-system-prompt")));
        suggested = dialog->suggestedPoolText();
        shownBlocks = dialog->numBlocksBox()->value();
        QTest::mouseClick(dialog->findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok),
                          Qt::LeftButton);
    });
    QAction* newSession = nullptr;
    for (QAction* action : window.findChildren<QAction*>()) {
        if (action->text() == QStringLiteral("&New session…")) {
            newSession = action;
        }
    }
    ASSERT_NE(newSession, nullptr);
    newSession->trigger();
    EXPECT_EQ(shownBlocks, 28) << "the dialog shows the chat's suggested pool";
    EXPECT_TRUE(suggested.contains(QStringLiteral("28 blocks of 16 tokens"))) << suggested.toStdString();
    ASSERT_TRUE(window.session().liveSettings().serving.has_value());
    EXPECT_EQ(*window.session().liveSettings().serving,
              (config::ServingSettings{"chat-shared-system-prompt", 16, 28, 256, 8, true, "document"}));
    window.transport()->setPlaying(false);
    window.session().runToEnd();
    ASSERT_TRUE(testing::waitUntil([&] { return window.session().liveFinished(); }, 120000));
    ASSERT_FALSE(window.session().liveFailure().has_value())
        << window.session().liveFailure()->reason.toStdString();
    const ServingSummary live = ServingSummary::of(window.session().paged());
    EXPECT_TRUE(live.finished);
    EXPECT_GT(live.hitTokens, 0);
    EXPECT_EQ(live.steps, 26);
    EXPECT_EQ(live.evictions, 5);
    EXPECT_EQ(live.preemptions, 1);
    EXPECT_EQ(live.peakBlocksUsed, 28);

    // The events themselves: blocks shared (a hit leaving the reference count above 1), cached, evicted, and
    // a request preempted.
    int shared = 0;
    std::map<trace::EventKind, int> kinds;
    for (const trace::Event& event : window.session().timeline().retainedEvents()) {
        ++kinds[event.kind()];
        if (const auto* touched = std::get_if<trace::BlockTouchedEvent>(&event.payload)) {
            shared += touched->refCnt > 1 ? 1 : 0;
        }
    }
    EXPECT_GT(shared, 0);
    EXPECT_GT(kinds[trace::EventKind::BlockCached], 0);
    EXPECT_EQ(kinds[trace::EventKind::BlockEvicted], 5);
    EXPECT_EQ(kinds[trace::EventKind::RequestPreempted], 1);

    // Every step's sentences, as the event log's Why column shows them, with the kind of their event.
    const auto sentences = [](MainWindow& shown) {
        shown.showEventLog();
        EventLogModel* log = shown.findChild<EventLogView*>()->model();
        std::vector<std::pair<int, QString>> all;
        for (std::int64_t step = 0; step < shown.session().stepCount(); ++step) {
            shown.session().setCurrentStep(step);
            for (int row = 0; row < log->rowCount(); ++row) {
                const QModelIndex why = log->index(row, EventLogModel::Why);
                all.emplace_back(log->data(why, EventLogModel::KindRole).toInt(), log->data(why).toString());
            }
        }
        return all;
    };
    const auto said = sentences(window);
    // Each event of these kinds has its sentence, saying what happened.
    const auto eachSays = [&](trace::EventKind kind, const QString& words) {
        int count = 0;
        for (const auto& [shownKind, text] : said) {
            if (shownKind == static_cast<int>(kind)) {
                ++count;
                EXPECT_TRUE(text.contains(words)) << text.toStdString();
            }
        }
        return count;
    };
    EXPECT_EQ(eachSays(trace::EventKind::BlockTouched, QStringLiteral("reuses block")),
              kinds[trace::EventKind::BlockTouched]);
    EXPECT_EQ(eachSays(trace::EventKind::BlockCached, QStringLiteral("is full")),
              kinds[trace::EventKind::BlockCached]);
    EXPECT_EQ(eachSays(trace::EventKind::BlockEvicted, QStringLiteral("evicted: least recently freed")), 5);
    EXPECT_EQ(eachSays(trace::EventKind::RequestPreempted, QStringLiteral("preempted: no free block")), 1);
    const auto anySays = [&](const QString& words) {
        return std::any_of(said.begin(), said.end(),
                           [&](const auto& shown) { return shown.second.contains(words); });
    };
    EXPECT_TRUE(anySays(QStringLiteral("reused blocks"))) << "a prefix hit shares the system prompt's blocks";
    EXPECT_TRUE(anySays(QStringLiteral("cached by user0")));
    EXPECT_TRUE(anySays(QStringLiteral("it will be recomputed")));

    // File > Save as, then open it: the same events, the same numbers, the same sentences.
    const QString path = dir.filePath(QStringLiteral("chat.kvsess"));
    ASSERT_EQ(window.session().saveAs(path), QString());
    MainWindow replay(servingFactory(), capabilities());
    replay.resize(1600, 1000);
    replay.show();
    ASSERT_EQ(replay.openFileNow(path), QString());
    EXPECT_EQ(replay.session().mode(), SessionController::Mode::Replay);
    // A replayed file is read step by step from disk (Timeline::openFile): compare each step's events.
    const trace::Timeline& liveTimeline = window.session().timeline();
    const trace::Timeline& replayedTimeline = replay.session().timeline();
    ASSERT_EQ(liveTimeline.stepCount(), replayedTimeline.stepCount());
    ASSERT_EQ(liveTimeline.eventCount(), replayedTimeline.eventCount());
    for (std::int64_t step = 0; step < liveTimeline.stepCount(); ++step) {
        const auto liveEvents = liveTimeline.eventsOfStep(step);
        const auto replayedEvents = replayedTimeline.eventsOfStep(step);
        ASSERT_EQ(liveEvents.size(), replayedEvents.size()) << "step " << step;
        for (std::size_t index = 0; index < liveEvents.size(); ++index) {
            ASSERT_EQ(liveEvents[index], replayedEvents[index]) << "step " << step << ", event " << index;
        }
    }
    const ServingSummary replayed = ServingSummary::of(replay.session().paged());
    EXPECT_EQ(replayed.steps, live.steps);
    EXPECT_EQ(replayed.hitTokens, live.hitTokens);
    EXPECT_EQ(replayed.evictions, live.evictions);
    EXPECT_EQ(replayed.preemptions, live.preemptions);
    for (std::int64_t step = 0; step < live.steps; ++step) {
        EXPECT_EQ(replay.session().paged().metrics(step), window.session().paged().metrics(step)) << step;
    }
    EXPECT_EQ(sentences(replay), said);
}

} // namespace
} // namespace kvscope::gui
