// SPDX-License-Identifier: GPL-3.0-or-later
// The inspector's budgets at 32 layers x 32768 tokens (issue 6): StepState at any step <= 5 ms and a
// full repaint of the main views <= 16 ms. Offscreen; the session is synthetic with offloading, so the
// transfer timeline has ~2M boxes.
// Issue 25: with KVSCOPE_BENCH_SESSION=FILE the window opens that session file instead, file-backed as the
// application opens files (e.g. `kvscope-cli synthetic 32x131072 --out F`): the same benchmarks then
// measure the on-demand path, and BM_ScrubFirstToLast the longest stall of a drag from the first step to the last.
// Issue 51: the transcript of a 32-layer x 131072-token session, written to a temporary file and opened
// file-backed as the application opens big sessions (BM_Transcript*).

#include "kvscope/gui/views/GanttPlottable.h"
#include "kvscope/gui/window/MainWindow.h"
#include "kvscope/gui/views/MaskView.h"
#include "kvscope/gui/views/MemoryView.h"
#include "kvscope/gui/views/OccupancyMapView.h"
#include "kvscope/gui/views/QuantizationView.h"
#include "kvscope/gui/session/SessionController.h"
#include "kvscope/gui/session/SyntheticEngine.h"
#include "kvscope/gui/views/TransferTimelineView.h"
#include "kvscope/gui/views/TranscriptView.h"
#include "kvscope/gui/session/ViewSelection.h"
#include "kvscope/gui/models/SessionTokens.h"
#include "kvscope/gui/models/ServerCacheHistory.h"
#include "kvscope/gui/models/ServerPrefixTreeModel.h"
#include "kvscope/trace/StateReducer.h"
#include "kvscope/trace/Timeline.h"
#include "kvscope/trace/RecordingSink.h"
#include "kvscope/synthetic/SyntheticSession.h"

#include <QApplication>
#include <QImage>
#include <QPainter>
#include <QSettings>
#include <QTabWidget>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <random>

namespace {

using namespace kvscope;

synthetic::SyntheticSessionOptions bigSession() {
    synthetic::SyntheticSessionOptions options;
    options.layers = 32;
    options.tokens = 32768;
    options.offload = true;
    return options;
}

// One window over the big session, built once for all benchmarks and destroyed before the application.
std::unique_ptr<gui::MainWindow> g_window;

gui::MainWindow& window() {
    if (!g_window) {
        g_window = [] {
        gui::EngineCapabilities capabilities;
        auto created = std::make_unique<gui::MainWindow>(gui::SessionEngineFactory{}, capabilities);
        if (const char* file = std::getenv("KVSCOPE_BENCH_SESSION"); file != nullptr && *file != '\0') {
            if (const QString error = created->session().openFile(QString::fromLocal8Bit(file)); !error.isEmpty()) {
                qFatal("KVSCOPE_BENCH_SESSION: %s", qPrintable(error));
            }
            created->resize(1600, 1000);
            created->show();
            QCoreApplication::processEvents();
            return created;
        }
        const synthetic::SyntheticSessionOptions options = bigSession();
        trace::RecordingSink sink;
        sink.reserve(synthetic::SyntheticSession::estimateEventCount(options));
        synthetic::SyntheticSession::generate(options, sink);
        created->session().setRecordedSession(gui::SyntheticEngine::metadataFor(options), sink.takeEvents(), "bench");
        created->resize(1600, 1000);
        created->show();
        QCoreApplication::processEvents();
        return created;
        }();
    }
    return *g_window;
}

std::int64_t randomStep(std::mt19937_64& random) {
    return static_cast<std::int64_t>(random() % static_cast<std::uint64_t>(window().session().stepCount()));
}

void BM_StepStateAtRandomStep(benchmark::State& state) {
    const trace::Timeline& timeline = window().session().timeline();
    std::mt19937_64 random(7);
    for (auto _ : state) {
        benchmark::DoNotOptimize(timeline.snapshotAt(randomStep(random)));
    }
    state.counters["events"] = static_cast<double>(timeline.eventCount());
}
BENCHMARK(BM_StepStateAtRandomStep)->Unit(benchmark::kMillisecond);

// Moving to a step (every view updates its models) and repainting the whole window into an image.
// Argument: the tab under the occupancy map (0 the layer table, 1 the event log).
void BM_FullRepaintAtRandomStep(benchmark::State& state) {
    gui::MainWindow& main = window();
    auto* tabs = main.centralWidget()->findChild<QTabWidget*>();
    tabs->setCurrentIndex(static_cast<int>(state.range(0)));
    QCoreApplication::processEvents();
    std::mt19937_64 random(11);
    QImage image(main.size(), QImage::Format_ARGB32_Premultiplied);
    using Clock = std::chrono::steady_clock;
    Clock::duration stepping{}, replotting{}, rendering{};
    for (auto _ : state) {
        // The event loop runs between repaints in the application: what the last step queued is
        // handled, untimed, so that it does not pile up over the iterations.
        state.PauseTiming();
        QCoreApplication::processEvents();
        state.ResumeTiming();
        const auto start = Clock::now();
        main.session().setCurrentStep(randomStep(random));
        const auto stepped = Clock::now();
        // Every chart on screen redraws its data (as after a resize); hidden docks' charts are not painted.
        for (QCustomPlot* plot : main.findChildren<QCustomPlot*>()) {
            if (plot->isVisible()) {
                plot->replot(QCustomPlot::rpQueuedRefresh);
            }
        }
        const auto replotted = Clock::now();
        QPainter painter(&image);
        main.render(&painter);
        painter.end();
        stepping += stepped - start;
        replotting += replotted - stepped;
        rendering += Clock::now() - replotted;
    }
    const auto perIteration = [&](Clock::duration total) {
        return benchmark::Counter(std::chrono::duration<double, std::milli>(total).count() /
                                  static_cast<double>(state.iterations()));
    };
    state.counters["step_ms"] = perIteration(stepping);
    state.counters["replot_ms"] = perIteration(replotting);
    state.counters["render_ms"] = perIteration(rendering);
    tabs->setCurrentIndex(0);
}
BENCHMARK(BM_FullRepaintAtRandomStep)->ArgName("tab")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// What stepping costs as a user steps: the step change, the queued work it causes (charts repaint only
// their cursor's columns; the transfer timeline replots its new range) and painting the window.
void BM_StepAndPaint(benchmark::State& state) {
    gui::MainWindow& main = window();
    std::mt19937_64 random(17);
    QImage image(main.size(), QImage::Format_ARGB32_Premultiplied);
    for (auto _ : state) {
        main.session().setCurrentStep(randomStep(random));
        QCoreApplication::processEvents();
        QPainter painter(&image);
        main.render(&painter);
    }
}
BENCHMARK(BM_StepAndPaint)->Unit(benchmark::kMillisecond);

// A drag of the step slider from the first step to the last: 400 positions evenly spaced (a slider
// 400 px wide), each handled and painted as the application does. max_ms is the longest stall.
void BM_ScrubFirstToLast(benchmark::State& state) {
    gui::MainWindow& main = window();
    QImage image(main.size(), QImage::Format_ARGB32_Premultiplied);
    const std::int64_t steps = main.session().stepCount();
    constexpr int kPositions = 400;
    double worst = 0.0;
    using Clock = std::chrono::steady_clock;
    for (auto _ : state) {
        for (int position = 0; position <= kPositions; ++position) {
            const auto start = Clock::now();
            main.session().setCurrentStep(steps > 1 ? (steps - 1) * position / kPositions : 0);
            QCoreApplication::processEvents();
            QPainter painter(&image);
            main.render(&painter);
            painter.end();
            worst = std::max(worst, std::chrono::duration<double, std::milli>(Clock::now() - start).count());
        }
    }
    state.counters["max_ms"] = worst;
    state.counters["positions"] = kPositions + 1;
}
BENCHMARK(BM_ScrubFirstToLast)->Iterations(1)->Unit(benchmark::kMillisecond);

// Each view alone: repaint at a random step (step change included).
template <typename View>
void repaintView(benchmark::State& state) {
    gui::MainWindow& main = window();
    // The main window's instance: the largest (the compare dock has small occupancy maps of its own).
    View* view = nullptr;
    for (View* candidate : main.findChildren<View*>()) {
        if (!view || candidate->width() * candidate->height() > view->width() * view->height()) {
            view = candidate;
        }
    }
    std::mt19937_64 random(13);
    QImage image(view->size().expandedTo(QSize(1, 1)), QImage::Format_ARGB32_Premultiplied);
    for (auto _ : state) {
        main.session().setCurrentStep(randomStep(random));
        if constexpr (std::is_base_of_v<QCustomPlot, View>) {
            view->replot(QCustomPlot::rpQueuedRefresh);
        }
        QPainter painter(&image);
        view->render(&painter);
    }
    state.SetLabel(QStringLiteral("%1x%2").arg(view->width()).arg(view->height()).toStdString());
}
BENCHMARK(repaintView<gui::OccupancyMapView>)->Name("BM_Repaint/OccupancyMap")->Unit(benchmark::kMillisecond);
BENCHMARK(repaintView<gui::MaskView>)->Name("BM_Repaint/Mask")->Unit(benchmark::kMillisecond);
BENCHMARK(repaintView<gui::MemoryView>)->Name("BM_Repaint/Memory")->Unit(benchmark::kMillisecond);
BENCHMARK(repaintView<gui::QuantizationView>)->Name("BM_Repaint/Quantization")->Unit(benchmark::kMillisecond);
BENCHMARK(repaintView<gui::TransferTimelineView>)->Name("BM_Repaint/TransferTimeline")->Unit(benchmark::kMillisecond);

// The transfer timeline zoomed out over the whole session: ~2M boxes merged into pixels.
void BM_TransferTimelineWholeSession(benchmark::State& state) {
    auto* view = window().findChild<gui::TransferTimelineView*>();
    bool found = false;
    for (auto _ : state) {
        view->xAxis->setRange(view->gantt()->getKeyRange(found));
        view->replot(QCustomPlot::rpQueuedRefresh);
    }
    state.counters["boxes"] = static_cast<double>(view->boxCount());
}
BENCHMARK(BM_TransferTimelineWholeSession)->Unit(benchmark::kMillisecond);

/// The transcript's session: 32 layers x 131072 tokens in a session file, opened file-backed, with a transcript
/// the size of the main window's dock. Built on first use (writing the file takes a while), gone before the
/// application.
struct TranscriptBench {
    QTemporaryDir folder;
    gui::SessionController session;
    gui::ViewSelection selection;
    std::unique_ptr<gui::TranscriptView> view;
    double openSeconds = 0.0;
    double textSeconds = 0.0;
    TranscriptBench() {
        const QString path = folder.filePath(QStringLiteral("transcript.kvsess"));
        synthetic::SyntheticSession::write(synthetic::SyntheticSession::sized(32, 131072), path.toStdString());
        view = std::make_unique<gui::TranscriptView>(session, selection);
        view->resize(380, 900);
        const auto start = std::chrono::steady_clock::now();
        if (const QString error = session.openFile(path); !error.isEmpty()) {
            qFatal("transcript session: %s", qPrintable(error));
        }
        openSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        while (view->readingText()) {
            QCoreApplication::processEvents();
        }
        textSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
};
std::unique_ptr<TranscriptBench> g_transcript;

TranscriptBench& transcriptBench() {
    if (!g_transcript) {
        g_transcript = std::make_unique<TranscriptBench>();
    }
    return *g_transcript;
}

// Opening the session with the transcript (open_s: the timeline's pass over the file and the transcript's first
// slice; text_s: until the transcript has read every step's token, slice by slice in the event loop), and the
// reading alone, at once (each file-backed step's frame decoded for its token).
void BM_TranscriptOpen(benchmark::State& state) {
    TranscriptBench& bench = transcriptBench();
    for (auto _ : state) {
        benchmark::DoNotOptimize(gui::SessionTokens::producedTokens(bench.session.timeline()));
    }
    state.counters["open_s"] = bench.openSeconds;
    state.counters["text_s"] = bench.textSeconds;
    state.counters["tokens"] = static_cast<double>(bench.view->tokenCount());
}
BENCHMARK(BM_TranscriptOpen)->Iterations(1)->Unit(benchmark::kMillisecond);

// A step of the slider and the transcript repainted: the step's fates (32 layers), the generated token scrolled
// into view, the lines in view laid out and painted. Argument: 0 the summary over the layers, 1 one layer.
void BM_TranscriptStepAndPaint(benchmark::State& state) {
    TranscriptBench& bench = transcriptBench();
    bench.view->setFollowLayer(state.range(0) == 1);
    bench.selection.setSelectedLayer(state.range(0) == 1 ? 1 : -1);
    std::mt19937_64 random(23);
    QImage image(bench.view->size(), QImage::Format_ARGB32_Premultiplied);
    for (auto _ : state) {
        bench.session.setCurrentStep(static_cast<std::int64_t>(random() % static_cast<std::uint64_t>(bench.session.stepCount())));
        QPainter painter(&image);
        bench.view->render(&painter);
    }
    const auto [first, last] = bench.view->paintedLines();
    state.counters["lines_painted"] = static_cast<double>(last - first);
    state.counters["lines"] = static_cast<double>(bench.view->lineCount());
}
BENCHMARK(BM_TranscriptStepAndPaint)->ArgName("layer")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// A resize of the transcript's width: every token's line break computed again (TranscriptLayout::wrap over
// 131072 widths), then the lines in view painted.
void BM_TranscriptRewrapAndPaint(benchmark::State& state) {
    TranscriptBench& bench = transcriptBench();
    QImage image(QSize(420, 900), QImage::Format_ARGB32_Premultiplied);
    int width = 380;
    for (auto _ : state) {
        width = width == 380 ? 420 : 380;
        bench.view->resize(width, 900);
        QPainter painter(&image);
        bench.view->render(&painter);
    }
    state.counters["lines"] = static_cast<double>(bench.view->lineCount());
}
BENCHMARK(BM_TranscriptRewrapAndPaint)->Unit(benchmark::kMillisecond);

// Hovering a token: its tooltip, with the step since which each layer's fate holds (a binary search over the
// file-backed session's states).
void BM_TranscriptToolTip(benchmark::State& state) {
    TranscriptBench& bench = transcriptBench();
    bench.view->setFollowLayer(false);
    bench.session.goToEnd();
    std::mt19937_64 random(29);
    for (auto _ : state) {
        benchmark::DoNotOptimize(
            bench.view->describe(static_cast<std::int64_t>(random() % static_cast<std::uint64_t>(bench.view->tokenCount()))));
    }
}
BENCHMARK(BM_TranscriptToolTip)->Unit(benchmark::kMillisecond);

} // namespace

// An attached server flooding the inspector: what each of its messages costs the views. Each message is vLLM's
// usual step batch (one BlockStored of one 32-token block with its text, after every 8th a BlockRemoved of the
// oldest) and the status; the timeline takes it, the history extends, and, once per batch of 100 messages (a
// frame's worth when flooding), the prefix tree is rebuilt for the latest step. items/s: server events per second.
void BM_ServerViewFollowsMessages(benchmark::State& state) {
    trace::Timeline timeline;
    gui::ServerCacheHistory history;
    gui::ServerPrefixTreeModel tree;
    trace::StepState latest;
    std::int64_t step = 0;
    std::uint64_t sequence = 0;
    std::int64_t events = 0;
    const auto emit = [&](trace::EventPayload payload) {
        const trace::Event event{step, -1, sequence++, std::move(payload)};
        timeline.emit(event);
        trace::StateReducer::apply(latest, event);
        ++events;
    };
    for (auto _ : state) {
        for (int message = 0; message < 100; ++message, ++step) {
            trace::ServerCacheEvent stored{trace::ServerCacheChange::Stored, step > 0, 0,
                                           {static_cast<std::uint64_t>(step) + 1}, static_cast<std::uint64_t>(step),
                                           std::vector<std::int64_t>(32, 42), 32, "GPU", std::string(128, 'a'),
                                           {}};
            for (int i = 1; i <= 32; ++i) {
                stored.pieceEnds.push_back(4 * i);
            }
            emit(std::move(stored));
            if (step % 8 == 7) {
                emit(trace::ServerCacheEvent{trace::ServerCacheChange::Removed, false, 0,
                                             {static_cast<std::uint64_t>(step / 8) + 1}, 0, {}, 0, "GPU", "", {}});
            }
            emit(trace::ServerStatusEvent{static_cast<std::uint64_t>(step), 0.0, false, step + 1, 0, 0, -1, -1});
            history.extend(timeline);
        }
        tree.setState(latest.server, step - 1);
        benchmark::DoNotOptimize(tree.nodeCount());
    }
    state.SetItemsProcessed(events);
    state.counters["blocks_held"] = static_cast<double>(latest.server.blocks.size());
}
BENCHMARK(BM_ServerViewFollowsMessages)->Iterations(100)->Unit(benchmark::kMillisecond);

int main(int argc, char** argv) {
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) {
        qputenv("QT_QPA_PLATFORM", "offscreen");
    }
    // The default layout every run: no window state saved by an earlier run or by the user's kvscope.
    QStandardPaths::setTestModeEnabled(true);
    QApplication application(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("kvscope-bench"));
    QApplication::setApplicationName(QStringLiteral("kvscope-bench"));
    QSettings().clear();
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    g_window.reset();
    g_transcript.reset();
    return 0;
}
