// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/window/MainWindow.h"

#include "kvscope/gui/models/EventExplainer.h"
#include "kvscope/gui/session/SessionController.h"
#include "kvscope/gui/session/ViewSelection.h"
#include "kvscope/gui/views/BlockPoolView.h"
#include "kvscope/gui/views/BlockTableView.h"
#include "kvscope/gui/views/ChannelErrorView.h"
#include "kvscope/gui/views/CompareView.h"
#include "kvscope/gui/views/EventLogView.h"
#include "kvscope/gui/views/HeadOccupancyView.h"
#include "kvscope/gui/views/LayerTableView.h"
#include "kvscope/gui/views/MaskView.h"
#include "kvscope/gui/views/MemoryView.h"
#include "kvscope/gui/views/OccupancyMapView.h"
#include "kvscope/gui/views/PrefixTreeView.h"
#include "kvscope/gui/views/ServerCacheView.h"
#include "kvscope/gui/window/AttachDialog.h"
#include "kvscope/gui/views/QuantizationView.h"
#include "kvscope/gui/views/RequestLanesView.h"
#include "kvscope/gui/views/ServingMetricsChart.h"
#include "kvscope/gui/views/SessionFailurePanel.h"
#include "kvscope/gui/views/TourPanel.h"
#include "kvscope/gui/views/WelcomePage.h"
#include "kvscope/gui/tours/TourCatalog.h"
#include "kvscope/gui/window/AppLauncher.h"
#include "kvscope/gui/views/TransferTimelineView.h"
#include "kvscope/gui/views/TranscriptView.h"
#include "kvscope/gui/window/NewSessionDialog.h"
#include "kvscope/gui/window/TransportBar.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QJsonObject>
#include <QJsonDocument>
#include <QJsonArray>
#include <QFileInfo>
#include <QGridLayout>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QProgressBar>
#include <QSettings>
#include <QSplitter>
#include <QStackedWidget>
#include <QStatusBar>
#include <QTabWidget>
#include <QTextStream>
#include <QTimer>
#include <QToolButton>
#include <qcustomplot.h>

namespace kvscope::gui {
namespace {

constexpr int kMaxRecentFiles = 8;
const QString kSessionFilter = QObject::tr("kvscope sessions (*.kvsess);;All files (*)");

} // namespace

MainWindow::MainWindow(SessionEngineFactory engineFactory, EngineCapabilities capabilities, QWidget* parent)
    : QMainWindow(parent), m_capabilities(std::move(capabilities)),
      m_session(std::make_unique<SessionController>(engineFactory)),
      m_compareSession(std::make_unique<SessionController>(engineFactory)),
      m_selection(std::make_unique<ViewSelection>()) {
    setWindowTitle(tr("kvscope"));
    setWindowIcon(QIcon(QStringLiteral(":/kvscope/kvscope.png")));
    setAcceptDrops(true);
    setDockOptions(AnimatedDocks | AllowNestedDocks | AllowTabbedDocks);
    createViews();
    createActions();
    createStatusBar();
    // The live label too: a file opened after a live session is a replay.
    connect(m_session.get(), &SessionController::sessionLoaded, this, &MainWindow::updateLiveState);
    connect(m_session.get(), &SessionController::stepChanged, this, &MainWindow::updateStatus);
    connect(m_session.get(), &SessionController::liveStateChanged, this, &MainWindow::updateLiveState);
    connect(m_session.get(), &SessionController::errorOccurred, this, &MainWindow::showError);
    connect(m_session.get(), &SessionController::fileOpened, this,
            [this](const QString& path, const QString& error) { fileOpened(path, error); });
    connect(m_compareSession.get(), &SessionController::errorOccurred, this, &MainWindow::showError);
    connect(m_session.get(), &SessionController::sessionLoaded, this, [this] {
        // Any session, replayed or live, takes the welcome page's place.
        m_central->setCurrentWidget(m_views);
        m_selection->clearStepRange();
        m_selection->setSelectedRequest({});
        m_selection->setSelectedPosition(-1);
        updateViewSet();
    });
    connect(m_session.get(), &SessionController::sessionGrew, this, &MainWindow::updateViewSet);
    connect(m_occupancy->failurePanel(), &SessionFailurePanel::newSessionRequested, this,
            &MainWindow::newSession);

    QSettings settings;
    resize(1500, 950);
    restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
    restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
    m_compareDock->hide();
    m_metricsDock->hide();
    m_tourDock->hide();
    m_transfersDock->hide();
    m_channelErrorsDock->hide();
    rebuildRecentMenu();
    updateStatus();
    updateLiveState();
}

MainWindow::~MainWindow() = default;

QDockWidget* MainWindow::addDock(QWidget* view, const QString& title, const QString& name, Qt::DockWidgetArea area) {
    auto* dock = new QDockWidget(title, this);
    dock->setObjectName(name);
    dock->setWidget(view);
    addDockWidget(area, dock);
    m_viewMenu->addAction(dock->toggleViewAction());
    return dock;
}

void MainWindow::createViews() {
    m_viewMenu = new QMenu(tr("&View"), this);
    m_occupancy = new OccupancyMapView(*m_session, *m_selection);
    m_layers = new LayerTableView(*m_session, *m_selection);
    m_events = new EventLogView(*m_session, *m_selection);
    m_tabs = new QTabWidget;
    // The pages' own frames suffice: no pane frame around them (filling it was a tenth of a full repaint).
    m_tabs->setDocumentMode(true);
    m_tabs->addTab(m_layers, tr("Layers"));
    m_tabs->addTab(m_events, tr("Events (why)"));
    m_tabs->addTab(new PrefixTreeView(*m_session), tr("Prefix tree"));
    // The selected layer's KV heads sit under the map, sharing its position axis.
    m_heads = new HeadOccupancyView(*m_session, *m_selection);
    // A serving session's pool, request lanes and selected block table take the map's place.
    m_pool = new BlockPoolView(*m_session, *m_selection);
    m_lanes = new RequestLanesView(*m_session, *m_selection);
    m_blockTable = new BlockTableView(*m_session, *m_selection);
    auto* serving = new QSplitter(Qt::Vertical);
    serving->addWidget(m_pool);
    serving->addWidget(m_lanes);
    serving->addWidget(m_blockTable);
    serving->setStretchFactor(0, 3);
    serving->setStretchFactor(1, 2);
    serving->setStretchFactor(2, 1);
    m_serving = serving;
    m_serving->hide();
    // An attached server's cache takes the map's place too.
    m_serverView = new ServerCacheView(*m_session, *m_selection);
    m_serverView->hide();
    auto* central = new QSplitter(Qt::Vertical);
    central->addWidget(m_serverView);
    central->addWidget(m_serving);
    central->addWidget(m_occupancy);
    central->addWidget(m_heads);
    central->addWidget(m_tabs);
    central->setStretchFactor(0, 5);
    central->setStretchFactor(1, 5);
    central->setStretchFactor(2, 3);
    central->setStretchFactor(3, 1);
    central->setStretchFactor(4, 2);
    m_views = central;
    m_welcome = new WelcomePage;
    m_central = new QStackedWidget;
    m_central->addWidget(m_views);
    m_central->addWidget(m_welcome);
    setCentralWidget(m_central);
    connect(m_welcome, &WelcomePage::tourRequested, this, [this](const QString& name) {
        if (const QString problem = startTour(name); !problem.isEmpty()) {
            showError(problem);
        }
    });
    connect(m_welcome, &WelcomePage::fileRequested, this, &MainWindow::openFile);
    connect(m_welcome, &WelcomePage::newSessionRequested, this, &MainWindow::newSession);
    connect(m_welcome, &WelcomePage::openRequested, this, &MainWindow::openDialog);

    m_mask = new MaskView(*m_session, *m_selection);
    m_transcript = new TranscriptView(*m_session, *m_selection);
    m_memory = new MemoryView(*m_session, *m_selection);
    m_quantization = new QuantizationView(*m_session, *m_selection);
    m_transfers = new TransferTimelineView(*m_session);
    m_channelErrors = new ChannelErrorView(*m_session, *m_selection);
    m_compare = new CompareView(*m_session, *m_compareSession, *m_selection);
    // A tour's explanation heads the right column, where the eye goes after the map.
    m_tourPanel = new TourPanel(*m_session);
    m_tourDock = addDock(m_tourPanel, tr("Tour"), QStringLiteral("tourDock"), Qt::RightDockWidgetArea);
    addDock(m_mask, tr("Mask"), QStringLiteral("maskDock"), Qt::RightDockWidgetArea);
    // The text is read top to bottom: a column of its own, left of the map.
    addDock(m_transcript, tr("Transcript"), QStringLiteral("transcriptDock"), Qt::LeftDockWidgetArea);
    addDock(m_memory, tr("Memory"), QStringLiteral("memoryDock"), Qt::RightDockWidgetArea);
    addDock(m_quantization, tr("Quantization"), QStringLiteral("quantizationDock"), Qt::RightDockWidgetArea);
    QDockWidget* transfers = addDock(m_transfers, tr("Transfers"), QStringLiteral("transfersDock"), Qt::BottomDockWidgetArea);
    m_transfersDock = transfers;
    m_compareDock = addDock(m_compare, tr("Compare"), QStringLiteral("compareDock"), Qt::BottomDockWidgetArea);
    m_channelErrorsDock =
        addDock(m_channelErrors, tr("Channel errors"), QStringLiteral("channelErrorsDock"), Qt::BottomDockWidgetArea);
    auto* metrics = new QWidget;
    auto* grid = new QGridLayout(metrics);
    grid->setContentsMargins(0, 0, 0, 0);
    const ServingMetricsChart::Metric kinds[] = {ServingMetricsChart::Metric::PoolUsage,
                                                 ServingMetricsChart::Metric::HitRate,
                                                 ServingMetricsChart::Metric::Evictions,
                                                 ServingMetricsChart::Metric::TokensPerStep};
    for (int index = 0; index < 4; ++index) {
        grid->addWidget(new ServingMetricsChart(*m_session, *m_selection, kinds[index]), 0, index);
    }
    // Four charts side by side under the serving views, sharing the bottom with the transfer timeline.
    m_metricsDock = addDock(metrics, tr("Serving metrics"), QStringLiteral("servingMetricsDock"), Qt::BottomDockWidgetArea);
    tabifyDockWidget(transfers, m_metricsDock);
    // Compare shares the full-width bottom area with the transfer timeline, as a tab.
    tabifyDockWidget(transfers, m_compareDock);
    tabifyDockWidget(transfers, m_channelErrorsDock);
    resizeDocks({findChild<QDockWidget*>(QStringLiteral("maskDock")), findChild<QDockWidget*>(QStringLiteral("transcriptDock"))},
                {560, 380}, Qt::Horizontal);
}

void MainWindow::createActions() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    QAction* newSession = file->addAction(QIcon::fromTheme(QStringLiteral("document-new")), tr("&New session…"), this,
                                          &MainWindow::newSession);
    newSession->setShortcut(QKeySequence::New);
    newSession->setEnabled(m_session->canRunLive());
    QAction* attach = file->addAction(tr("A&ttach to server…"), this, &MainWindow::attachDialog);
    attach->setEnabled(m_session->canRunLive());
    attach->setToolTip(tr("Follow a running vLLM or SGLang server's KV cache through its KV event stream"));
    QAction* open = file->addAction(QIcon::fromTheme(QStringLiteral("document-open")), tr("&Open…"), this,
                                    &MainWindow::openDialog);
    open->setShortcut(QKeySequence::Open);
    // The real models kvscope knows by name, with their state, beside any GGUF file: read as the menu opens,
    // so that a model installed meanwhile shows.
    m_modelMenu = file->addMenu(tr("Open &model"));
    m_modelMenu->setEnabled(m_session->canRunLive());
    m_modelMenu->setToolTipsVisible(true);
    connect(m_modelMenu, &QMenu::aboutToShow, this, &MainWindow::fillModelMenu);
    fillModelMenu();
    m_recentMenu = file->addMenu(tr("Open &recent"));
    file->addSeparator();
    m_saveAction = file->addAction(QIcon::fromTheme(QStringLiteral("document-save-as")), tr("Save &as…"), this,
                                   &MainWindow::saveAsDialog);
    m_saveAction->setShortcut(QKeySequence::SaveAs);
    m_exportAction = file->addAction(tr("&Export for Perfetto…"), this, &MainWindow::exportDialog);
    m_exportAction->setShortcut(Qt::CTRL | Qt::Key_E);
    file->addSeparator();
    QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
    quit->setShortcut(QKeySequence::Quit);

    m_transport = new TransportBar(*m_session, this);
    addToolBar(Qt::TopToolBarArea, m_transport);
    QMenu* playback = menuBar()->addMenu(tr("&Playback"));
    for (QAction* action : {m_transport->toStartAction(), m_transport->stepBackAction(), m_transport->playAction(),
                            m_transport->stepAction(), m_transport->toEndAction()}) {
        playback->addAction(action);
    }
    playback->addSeparator();
    m_runAction = playback->addAction(tr("&Run live session to the end"), m_session.get(), &SessionController::runToEnd);
    m_runAction->setShortcut(Qt::CTRL | Qt::Key_R);
    playback->addAction(tr("&Cancel run"), this, &MainWindow::cancelRun)->setShortcut(Qt::Key_Escape);

    QToolBar* fileBar = new QToolBar(tr("File"), this);
    fileBar->setObjectName(QStringLiteral("fileToolbar"));
    fileBar->addAction(newSession);
    fileBar->addAction(open);
    fileBar->addAction(m_saveAction);
    insertToolBar(m_transport, fileBar);

    menuBar()->addMenu(m_viewMenu);
    m_viewMenu->addSeparator();
    m_viewMenu->addAction(tr("Reset chart zoom"), m_selection.get(), &ViewSelection::clearStepRange);
    m_scoreOverlayAction = m_viewMenu->addAction(tr("Press &scores on the occupancy map"));
    m_scoreOverlayAction->setCheckable(true);
    m_scoreOverlayAction->setToolTip(tr("Shade each token a cache press kept by its score"));
    connect(m_scoreOverlayAction, &QAction::toggled, m_occupancy, &OccupancyMapView::setScoreOverlay);
    QAction* transcriptLayer = m_viewMenu->addAction(tr("&Transcript by the selected layer"));
    transcriptLayer->setCheckable(true);
    transcriptLayer->setToolTip(tr("Colour the transcript's tokens by the selected layer's cache, not summed over the layers"));
    connect(transcriptLayer, &QAction::toggled, m_transcript, &TranscriptView::setFollowLayer);

    QMenu* compare = menuBar()->addMenu(tr("&Compare"));
    compare->addAction(tr("Compare with session &file…"), this, &MainWindow::compareFileDialog);
    compare->addAction(tr("Compare with a &live run…"), this, &MainWindow::compareLiveDialog)
        ->setEnabled(m_session->canRunLive());
    compare->addAction(tr("The &press against no press"), this, [this] {
        if (const QString problem = comparePressWithoutIt(); !problem.isEmpty()) {
            showError(problem);
        }
    })->setEnabled(m_session->canRunLive());
    compare->addAction(tr("&Hide comparison"), m_compareDock, &QWidget::hide);

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&Welcome"), this, &MainWindow::showWelcome);
    QMenu* tours = help->addMenu(tr("Guided &tours"));
    for (const Tour& tour : TourCatalog::tours()) {
        tours->addAction(tour.title, this, [this, name = tour.name] {
            if (const QString problem = startTour(name); !problem.isEmpty()) {
                showError(problem);
            }
        });
    }
    help->addSeparator();
    help->addAction(tr("&About kvscope"), this, [this] {
        QMessageBox::about(this, tr("About kvscope"),
                           tr("<b>kvscope</b><br>An inspector for the key-value caches of transformer language "
                              "models: step a live model or replay a session file and see what every cache "
                              "layer holds, why it changed, and where its bytes live."));
    });
}

void MainWindow::createStatusBar() {
    m_modelLabel = new QLabel;
    m_cacheLabel = new QLabel;
    m_deviceLabel = new QLabel;
    m_memoryLabel = new QLabel;
    m_liveLabel = new QLabel;
    m_progress = new QProgressBar;
    m_progress->setMaximumWidth(180);
    m_progress->setTextVisible(true);
    m_cancel = new QToolButton;
    m_cancel->setText(tr("Cancel"));
    m_cancel->setToolTip(tr("Stop the live run after the current token (Esc)"));
    connect(m_cancel, &QToolButton::clicked, this, &MainWindow::cancelRun);
    statusBar()->addWidget(m_modelLabel);
    statusBar()->addWidget(m_cacheLabel);
    statusBar()->addWidget(m_deviceLabel);
    statusBar()->addWidget(m_memoryLabel);
    statusBar()->addPermanentWidget(m_liveLabel);
    statusBar()->addPermanentWidget(m_progress);
    statusBar()->addPermanentWidget(m_cancel);
}

void MainWindow::openFile(const QString& path) {
    statusBar()->showMessage(tr("Opening %1…").arg(path));
    m_session->openFileInBackground(path);
}

QString MainWindow::openFileNow(const QString& path) {
    const QString error = m_session->openFile(path);
    if (error.isEmpty()) {
        noteOpened(path);
    }
    return error;
}

void MainWindow::fileOpened(const QString& path, const QString& error) {
    if (!error.isEmpty()) {
        showError(tr("Cannot open %1:\n%2").arg(path, error));
        return;
    }
    noteOpened(path);
    if (!m_session->damage().isEmpty()) {
        QMessageBox::warning(this, tr("Damaged session file"), m_session->damage());
    }
}

void MainWindow::noteOpened(const QString& path) {
    followTour({});
    statusBar()->clearMessage();
    m_transport->setPlaying(false);
    addRecentFile(QFileInfo(path).absoluteFilePath());
}

void MainWindow::startLive(const config::RunSettings& settings) {
    followTour({});
    m_lastSettings = settings;
    // An attached server is followed as its messages come, not a step per request.
    m_session->startLive(settings, settings.attach ? SessionController::Generation::ToTheEnd
                                                   : SessionController::Generation::OnRequest);
    m_transport->setPlaying(true);
}

void MainWindow::compareWithFile(const QString& path) {
    if (const QString error = compareWithFileNow(path); !error.isEmpty()) {
        showError(tr("Cannot open %1 for comparison:\n%2").arg(path, error));
    }
}

QString MainWindow::compareWithFileNow(const QString& path) {
    const QString error = m_compareSession->openFile(path);
    if (!error.isEmpty()) {
        return error;
    }
    m_compareSession->setCurrentStep(m_session->currentStep());
    m_compareDock->show();
    bringToFront(m_compareDock);
    return {};
}

void MainWindow::compareWithLive(const config::RunSettings& settings) {
    m_compareSession->startLive(settings, SessionController::Generation::ToTheEnd);
    m_compareDock->show();
    bringToFront(m_compareDock);
}

void MainWindow::bringToFront(QDockWidget* dock) {
    dock->raise();
    QTimer::singleShot(0, dock, [dock] {
        if (!dock->isHidden()) {
            dock->raise();
        }
    });
}

void MainWindow::showWelcome() {
    m_welcome->setRecentFiles(recentFiles());
    m_central->setCurrentWidget(m_welcome);
}

bool MainWindow::showsWelcome() const { return m_central->currentWidget() == m_welcome; }

QString MainWindow::startTour(const QString& name) {
    const auto parsed = AppLauncher::parse({QStringLiteral("kvscope"), QStringLiteral("--tour"), name}, m_capabilities);
    if (const auto* problem = std::get_if<QString>(&parsed)) {
        return *problem;
    }
    QString log;
    QTextStream errors(&log);
    AppLauncher::launch(*this, std::get<LaunchOptions>(parsed), errors);
    return log.trimmed();
}

void MainWindow::followTour(const QString& name) {
    const Tour* tour = name.isEmpty() ? nullptr : TourCatalog::find(name);
    m_tourPanel->setTour(tour);
    m_tourDock->setVisible(tour != nullptr);
    if (tour) {
        m_tourDock->raise();
        resizeDocks({m_tourDock}, {height() * 2 / 5}, Qt::Vertical);
    }
}

bool MainWindow::showsServingViews() const { return !m_serving->isHidden(); }

bool MainWindow::showsServerView() const { return !m_serverView->isHidden(); }

void MainWindow::updateViewSet() {
    // A dock with nothing to show stays out of the way until it has: the transfer timeline comes with a
    // session's first transfer (an offloaded cache) and goes with a session that moves nothing. Only the
    // change is acted on, so a dock shown or closed by hand (View menu) stays so.
    const bool moves = m_transfers->boxCount() > 0;
    if (moves != m_transfersMove) {
        m_transfersMove = moves;
        m_transfersDock->setVisible(moves);
        if (moves) {
            m_transfersDock->raise();
        }
    }
    // Likewise the channel error maps, with a quantising llama.cpp cache's first report.
    const bool reported = m_channelErrors->hasReports();
    if (reported != m_channelErrorsReported) {
        m_channelErrorsReported = reported;
        m_channelErrorsDock->setVisible(reported);
        if (reported) {
            m_channelErrorsDock->raise();
        }
    }
    // From the first batch on (its metadata), so that an attachment that fails to start leaves the map's
    // failure panel saying why.
    const bool attached = m_session->server().active() || m_session->metadata().cacheKind == "server";
    const bool serving = !attached && m_session->paged().active();
    if (serving == showsServingViews() && attached == showsServerView()) {
        return;
    }
    m_serverView->setVisible(attached);
    m_serving->setVisible(serving);
    m_occupancy->setVisible(!serving && !attached);
    m_heads->setVisible(!serving && !attached);
    m_metricsDock->setVisible(serving);
    // The per-layer docks have nothing to show for a serving or attached session: the pool views take their room.
    for (const char* name : {"maskDock", "memoryDock", "quantizationDock", "transcriptDock"}) {
        if (auto* dock = findChild<QDockWidget*>(QLatin1String(name))) {
            dock->setVisible(!serving && !attached);
        }
    }
    if (serving) {
        // A comparison asked for with the session (File > New session > Serving > Compare with,
        // --compare-serving, --compare FILE) stays in front of the metrics that share its place.
        bringToFront(m_compareDock->isHidden() ? m_metricsDock : m_compareDock);
    }
    if (serving || attached) {
        showEventLog();
    }
}

void MainWindow::showEventLog() { m_tabs->setCurrentWidget(m_events); }

QString MainWindow::comparePressWithoutIt() {
    if (m_session->mode() != SessionController::Mode::Live) {
        return tr("Start a live session with a cache press first (File → New session); a session file compares "
                  "with another file (Compare → Compare with session file).");
    }
    config::RunSettings settings = m_session->liveSettings();
    if (settings.press.name.empty()) {
        return tr("This live session runs no cache press: start one with a press (File → New session → Cache "
                  "press) to compare it with the same run without.");
    }
    settings.press = {};
    compareWithLive(settings);
    return {};
}

QString MainWindow::compareServing(const config::ServingSettings& serving) {
    if (m_session->mode() != SessionController::Mode::Live || !m_session->liveSettings().serving) {
        return tr("Serve a workload first (File → New session → Serving, or kvscope --workload); a serving "
                  "session file compares with another one (Compare → Compare with session file).");
    }
    config::RunSettings settings = m_session->liveSettings();
    settings.serving = serving;
    compareWithLive(settings);
    return {};
}

QImage MainWindow::renderImage() {
    for (QCustomPlot* plot : findChildren<QCustomPlot*>()) {
        plot->replot(QCustomPlot::rpQueuedRefresh);
    }
    return grab().toImage();
}

void MainWindow::cancelRun() {
    // The transport first: playing, it would ask the engine for the next token again.
    m_transport->setPlaying(false);
    m_session->cancelRun();
}

void MainWindow::fillModelMenu() {
    m_modelMenu->clear();
    for (const config::KnownModel& known : config::ModelFileLocator::known()) {
        QAction* action = m_modelMenu->addAction(
            tr("%1 — %2").arg(QString::fromStdString(known.title), NewSessionDialog::knownModelState(known)));
        // A model not installed still starts: its failure says how to install it.
        action->setToolTip(tr("Run %1 live (--model %2)").arg(QString::fromStdString(known.title),
                                                              QString::fromStdString(known.name)));
        connect(action, &QAction::triggered, this, [this, name = QString::fromStdString(known.name)] { startModel(name); });
    }
    m_modelMenu->addSeparator();
    m_modelMenu->addAction(tr("GGUF &file…"), this, &MainWindow::openModelDialog)
        ->setToolTip(tr("Run a llama.cpp GGUF model file live"));
}

void MainWindow::openModelDialog() {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open a GGUF model"), QString(),
                                                      tr("GGUF models (*.gguf);;All files (*)"));
    if (!path.isEmpty()) {
        startModel(path);
    }
}

void MainWindow::startModel(const QString& path) {
    // The session on screen keeps its cache, press and prompt; only the model changes.
    const bool live = m_session->mode() == SessionController::Mode::Live;
    config::RunSettings settings = live ? m_session->liveSettings() : m_lastSettings;
    settings.preset.clear();
    settings.configPath.clear();
    settings.checkpointDir.clear();
    settings.tokenizerPath.clear();
    settings.weightSeed.reset();
    settings.modelFile = path.toStdString();
    startLive(settings);
}

void MainWindow::newSession() {
    // Filled in with the session on screen, so that a failed one is corrected rather than retyped.
    const bool live = m_session->mode() == SessionController::Mode::Live;
    NewSessionDialog dialog(m_capabilities, live ? m_session->liveSettings() : m_lastSettings, this);
    if (dialog.exec() == QDialog::Accepted) {
        startLive(dialog.settings());
        if (const std::optional<config::ServingSettings> compared = dialog.compareServing()) {
            compareServing(*compared);
        }
    }
}

void MainWindow::attachDialog() {
    const bool live = m_session->mode() == SessionController::Mode::Live;
    AttachDialog dialog(live ? m_session->liveSettings() : m_lastSettings, this);
    if (dialog.exec() == QDialog::Accepted) {
        startLive(dialog.settings());
    }
}

void MainWindow::openDialog() {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open session"), {}, kSessionFilter);
    if (!path.isEmpty()) {
        openFile(path);
    }
}

void MainWindow::saveAsDialog() {
    const QString path = QFileDialog::getSaveFileName(this, tr("Save session as"), QStringLiteral("session.kvsess"),
                                                      kSessionFilter);
    if (path.isEmpty()) {
        return;
    }
    const QString error = m_session->saveAs(path);
    if (!error.isEmpty()) {
        showError(tr("Cannot save %1:\n%2").arg(path, error));
        return;
    }
    addRecentFile(QFileInfo(path).absoluteFilePath());
    statusBar()->showMessage(tr("Saved %1").arg(path), 4000);
}

void MainWindow::exportDialog() {
    const QString path = QFileDialog::getSaveFileName(this, tr("Export for Perfetto"), QStringLiteral("session.json"),
                                                      tr("Chrome trace JSON (*.json)"));
    if (path.isEmpty()) {
        return;
    }
    const QString error = m_session->exportPerfetto(path);
    if (!error.isEmpty()) {
        showError(tr("Cannot export %1:\n%2").arg(path, error));
        return;
    }
    statusBar()->showMessage(tr("Exported %1: open it at ui.perfetto.dev").arg(path), 6000);
}

void MainWindow::compareFileDialog() {
    const QString path = QFileDialog::getOpenFileName(this, tr("Session to compare with"), {}, kSessionFilter);
    if (!path.isEmpty()) {
        compareWithFile(path);
    }
}

void MainWindow::compareLiveDialog() {
    config::RunSettings settings = m_lastSettings;
    if (m_session->mode() == SessionController::Mode::Live) {
        settings = m_session->liveSettings();
    }
    settings.prompt = m_session->metadata().prompt.empty() ? settings.prompt : m_session->metadata().prompt;
    if (settings.serving) {
        // Serving: the usual question is what prefix caching saves, so B serves the workload without it
        // (or with it, when A runs without).
        settings.serving->prefixCaching = !settings.serving->prefixCaching;
    } else if (!settings.press.name.empty()) {
        // With a press, the usual question is what the press changes: B runs without it.
        settings.press = {};
    } else if (settings.cache.kind == config::CacheKind::Quantized ||
               settings.cache.kind == config::CacheKind::LlamaCpp) {
        // A quantising cache: what does its quantisation change? B holds full precision.
        settings.cache.kind = config::CacheKind::Dynamic;
    } else {
        // Otherwise: what does a 2-bit quantized cache change?
        settings.cache.kind = config::CacheKind::Quantized;
        settings.cache.nbits = 2;
    }
    NewSessionDialog dialog(m_capabilities, settings, this);
    dialog.setWindowTitle(settings.serving ? tr("Second session to compare (same workload)")
                                           : tr("Second session to compare (same prompt)"));
    if (dialog.exec() == QDialog::Accepted) {
        compareWithLive(dialog.settings());
    }
}

bool MainWindow::isSessionFile(const QString& path) {
    const QFileInfo info(path);
    return info.isFile() && info.isReadable();
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
    const QList<QUrl> urls = event->mimeData()->urls();
    if (!urls.isEmpty() && urls.front().isLocalFile() && isSessionFile(urls.front().toLocalFile())) {
        event->acceptProposedAction();
    }
}

void MainWindow::dropEvent(QDropEvent* event) {
    const QList<QUrl> urls = event->mimeData()->urls();
    if (urls.isEmpty() || !urls.front().isLocalFile()) {
        return;
    }
    event->acceptProposedAction();
    openFile(urls.front().toLocalFile());
}

void MainWindow::closeEvent(QCloseEvent* event) {
    QSettings settings;
    settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("window/state"), saveState());
    m_session->cancelRun();
    m_compareSession->cancelRun();
    QMainWindow::closeEvent(event);
}

QStringList MainWindow::recentFiles() const {
    return QSettings().value(QStringLiteral("recentFiles")).toStringList();
}

void MainWindow::addRecentFile(const QString& path) {
    QStringList files = recentFiles();
    files.removeAll(path);
    files.prepend(path);
    while (files.size() > kMaxRecentFiles) {
        files.removeLast();
    }
    QSettings().setValue(QStringLiteral("recentFiles"), files);
    rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu() {
    m_recentMenu->clear();
    const QStringList files = recentFiles();
    for (const QString& path : files) {
        m_recentMenu->addAction(QFileInfo(path).fileName(), this, [this, path] { openFile(path); })->setToolTip(path);
    }
    if (files.isEmpty()) {
        m_recentMenu->addAction(tr("(none)"))->setEnabled(false);
    } else {
        m_recentMenu->addSeparator();
        m_recentMenu->addAction(tr("Clear"), this, [this] {
            QSettings().remove(QStringLiteral("recentFiles"));
            rebuildRecentMenu();
        });
    }
}

QString MainWindow::poolText(const trace::PagedState& paged, const std::string& cacheSettingsJson) {
    // A serving session's cache is its block pool: the blocks requests hold, in bytes where the session
    // recorded a block's bytes per layer group (serving::ServingSessionSettings; older files give blocks only).
    int held = 0;
    double heldBytes = 0.0;
    const QJsonObject settings = QJsonDocument::fromJson(QByteArray::fromStdString(cacheSettingsJson)).object();
    const QJsonArray blockBytes = settings.value(QStringLiteral("block_bytes")).toArray();
    bool bytesKnown = !blockBytes.isEmpty();
    for (const trace::PagedBlockState& block : paged.blocks) {
        if (block.refCnt <= 0) {
            continue;
        }
        ++held;
        if (block.group >= 0 && block.group < blockBytes.size()) {
            heldBytes += blockBytes.at(block.group).toDouble();
        } else {
            bytesKnown = false;
        }
    }
    const int usable = paged.numBlocks - (paged.nullBlock >= 0 ? 1 : 0);
    if (!bytesKnown) {
        return tr("Pool: %1 of %2 blocks held").arg(held).arg(usable);
    }
    return tr("Pool: %1 held of %2 (%3 of %4 blocks)")
        .arg(EventExplainer::formatBytes(heldBytes),
             EventExplainer::formatBytes(settings.value(QStringLiteral("pool_bytes")).toDouble()))
        .arg(held)
        .arg(usable);
}

void MainWindow::updateStatus() {
    const trace::SessionMetadata& metadata = m_session->metadata();
    const trace::StepState& state = *m_session->state();
    const bool loaded = m_session->mode() != SessionController::Mode::Empty;
    setWindowTitle(loaded ? tr("%1 — kvscope").arg(m_session->name()) : tr("kvscope"));
    m_modelLabel->setText(tr("Model: %1").arg(metadata.model.empty() ? tr("–") : QString::fromStdString(metadata.model)));
    m_cacheLabel->setText(tr("Cache: %1").arg(metadata.cacheKind.empty() ? tr("–") : QString::fromStdString(metadata.cacheKind)));
    m_deviceLabel->setText(tr("Device: %1").arg(QString::fromStdString(metadata.device)));
    if (state.paged.active) {
        m_memoryLabel->setText(poolText(state.paged, metadata.cacheSettingsJson));
    } else {
        m_memoryLabel->setText(tr("Memory: device %1 (quantized %2), host %3")
                                   .arg(EventExplainer::formatBytes(static_cast<double>(state.memoryDeviceTotal())),
                                        EventExplainer::formatBytes(static_cast<double>(state.memoryDeviceQuantized)),
                                        EventExplainer::formatBytes(static_cast<double>(state.memoryHost))));
    }
    const bool hasEvents = m_session->timeline().eventCount() > 0;
    m_saveAction->setEnabled(hasEvents);
    m_exportAction->setEnabled(hasEvents);
}

void MainWindow::updateLiveState() {
    const bool live = m_session->mode() == SessionController::Mode::Live;
    const bool busy = live && m_session->liveBusy();
    m_runAction->setEnabled(live && !m_session->liveFinished());
    m_progress->setVisible(busy);
    m_cancel->setVisible(busy);
    if (live) {
        const qint64 generated = m_session->stepCount();
        m_progress->setRange(0, static_cast<int>(m_session->liveTokenTarget()));
        m_progress->setValue(static_cast<int>(std::min<qint64>(generated, m_session->liveTokenTarget())));
        m_progress->setFormat(tr("%v / %m tokens"));
        const auto& failure = m_session->liveFailure();
        m_liveLabel->setText(failure                     ? tr("live: failed")
                             : m_session->liveFinished() ? tr("live: finished")
                             : busy                      ? tr("live: generating")
                                                         : tr("live: paused"));
        m_liveLabel->setToolTip(failure ? failure->headline() + QStringLiteral(":\n") + failure->reason
                                        : QString());
    } else {
        m_liveLabel->setText(m_session->mode() == SessionController::Mode::Replay ? tr("replay") : QString());
        m_liveLabel->setToolTip({});
    }
    updateStatus();
}

void MainWindow::showError(const QString& message) {
    statusBar()->showMessage(message.section(QLatin1Char('\n'), 0, 0), 8000);
    if (isVisible() && !QApplication::platformName().contains(QStringLiteral("offscreen"))) {
        QMessageBox::warning(this, tr("kvscope"), message);
    } else {
        qWarning("kvscope: %s", qPrintable(message));
    }
}

} // namespace kvscope::gui
