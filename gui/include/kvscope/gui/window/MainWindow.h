// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gui/session/SessionEngine.h"
#include "kvscope/config/RunSettings.h"
#include "kvscope/trace/PagedState.h"

#include <QImage>
#include <QMainWindow>

#include <memory>

class QAction;
class QDockWidget;
class QLabel;
class QMenu;
class QProgressBar;
class QStackedWidget;
class QTabWidget;
class QToolButton;

namespace kvscope::gui {

class BlockPoolView;
class BlockTableView;
class CompareView;
class EventLogView;
class HeadOccupancyView;
class LayerTableView;
class MaskView;
class MemoryView;
class OccupancyMapView;
class QuantizationView;
class RequestLanesView;
class ServerCacheView;
class SessionController;
class TourPanel;
class TransferTimelineView;
class ChannelErrorView;
class TransportBar;
class WelcomePage;
class TranscriptView;
class ViewSelection;

/// The inspector window: menus and toolbar (new live session, open, recent files, save as, export for
/// Perfetto, compare), the transport, every view over one SessionController and one ViewSelection,
/// drag and drop of session files, a status bar (model, cache, device, memory, progress with cancel),
/// and window state and recent files kept in QSettings.
class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    MainWindow(SessionEngineFactory engineFactory, EngineCapabilities capabilities, QWidget* parent = nullptr);
    ~MainWindow() override;

    SessionController& session() { return *m_session; }
    SessionController& compareSession() { return *m_compareSession; }
    ViewSelection& selection() { return *m_selection; }
    TransportBar* transport() const { return m_transport; }
    HeadOccupancyView* headOccupancy() const { return m_heads; }
    OccupancyMapView* occupancyMap() const { return m_occupancy; }
    /// File > Open model: a known model's entry starts it live, as --model NAME does.
    QMenu* modelMenu() const { return m_modelMenu; }
    /// The session's text, coloured by what the cache holds of each token (a dock on the left).
    TranscriptView* transcript() const { return m_transcript; }
    /// A serving session's views (shown in place of the occupancy map while such a session is open).
    BlockPoolView* blockPool() const { return m_pool; }
    RequestLanesView* requestLanes() const { return m_lanes; }
    BlockTableView* blockTable() const { return m_blockTable; }
    /// Whether the serving views are the ones shown.
    bool showsServingViews() const;
    /// An attached server's view (kvscope --attach), shown in place of the map while such a session is open.
    ServerCacheView* serverView() const { return m_serverView; }
    bool showsServerView() const;
    /// Brings the event log's tab (why each event happened) in front of the layer table.
    void showEventLog();
    /// The welcome page (tours, samples, recent files, new session) in place of the views, until a
    /// session starts; Help → Welcome brings it back.
    void showWelcome();
    bool showsWelcome() const;
    WelcomePage* welcomePage() const { return m_welcome; }
    /// Starts the guided tour `name` live, as `kvscope --tour NAME` does. Returns why it cannot (empty
    /// on success).
    QString startTour(const QString& name);
    /// Shows the tour panel following `name` over the session now open (the launcher starts the session).
    void followTour(const QString& name);
    TourPanel* tourPanel() const { return m_tourPanel; }
    /// View > Press scores: the occupancy map's score overlay.
    QAction* scoreOverlayAction() const { return m_scoreOverlayAction; }

    /// Opens a session file on a loader thread; errors and damage are shown in dialogs once it is read.
    void openFile(const QString& path);
    /// Opens a session file at once, showing no dialog: returns the reason of a failure (empty on success).
    QString openFileNow(const QString& path);
    /// The status bar's memory for a serving session: the pool's held and total bytes and blocks (bytes where
    /// the session's cache settings give `block_bytes` per layer group).
    static QString poolText(const trace::PagedState& paged, const std::string& cacheSettingsJson);
    /// Starts a live run and plays it.
    void startLive(const config::RunSettings& settings);
    /// File > Open model: a live run of the GGUF file `path` (or `smollm2`) with the current session's cache,
    /// press and prompt.
    void startModel(const QString& path);
    /// Compare mode: B from a file or a live run to the end; shows the compare dock. compareWithFile shows
    /// a failure in a dialog, compareWithFileNow returns it.
    void compareWithFile(const QString& path);
    QString compareWithFileNow(const QString& path);
    void compareWithLive(const config::RunSettings& settings);
    /// Compare > Press against no press: B runs the live session's settings without its press, on the
    /// same prompt. Returns why it cannot (no live session, or one without a press), else empty.
    QString comparePressWithoutIt();
    /// Compare mode for serving: B serves the live serving session's workload again with `serving` (another
    /// pool, block size, budget, or prefix caching off), to the end. Returns why it cannot (no live serving
    /// session), else empty.
    QString compareServing(const config::ServingSettings& serving);
    /// The compare dock's view.
    CompareView* compareView() const { return m_compare; }
    /// Replots every chart now and renders the window (offscreen works); for --screenshot.
    QImage renderImage();
    QStringList recentFiles() const;
    static bool isSessionFile(const QString& path);

protected:
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;
    void closeEvent(QCloseEvent* event) override;

private:
    /// Puts the dock in front of its tab group now and again once the pending layout has run: a tab raised
    /// before the window or the dock is laid out (a hidden dock just shown, a window not yet shown) is not in
    /// the tab bar yet, and the tab bar built later keeps the tab it had in front.
    void bringToFront(QDockWidget* dock);
    void createViews();
    void createActions();
    void createStatusBar();
    /// File → New session, filled in with the live session's settings (a failed one's, to correct them).
    void newSession();
    /// Playback → Cancel run (Esc) and the status bar's Cancel: stops playing and the engine after its step.
    void cancelRun();
    void openDialog();
    /// File > Attach to server.
    void attachDialog();
    void openModelDialog();
    /// File > Open model: the known models with their state, then a GGUF file.
    void fillModelMenu();
    void saveAsDialog();
    void exportDialog();
    void compareFileDialog();
    void compareLiveDialog();
    /// A file opened on the loader thread: its error or damage in a dialog.
    void fileOpened(const QString& path, const QString& error);
    /// What every successful open does: transport stopped, the file among the recent ones.
    void noteOpened(const QString& path);
    void addRecentFile(const QString& path);
    void rebuildRecentMenu();
    void updateStatus();
    /// Shows the serving views for a serving session, the per-layer views for any other.
    void updateViewSet();
    void updateLiveState();
    void showError(const QString& message);
    QDockWidget* addDock(QWidget* view, const QString& title, const QString& name, Qt::DockWidgetArea area);

    EngineCapabilities m_capabilities;
    std::unique_ptr<SessionController> m_session;
    std::unique_ptr<SessionController> m_compareSession;
    std::unique_ptr<ViewSelection> m_selection;
    config::RunSettings m_lastSettings = config::liveSessionSettings();
    TransportBar* m_transport = nullptr;
    OccupancyMapView* m_occupancy = nullptr;
    HeadOccupancyView* m_heads = nullptr;
    LayerTableView* m_layers = nullptr;
    EventLogView* m_events = nullptr;
    MaskView* m_mask = nullptr;
    QMenu* m_modelMenu = nullptr;
    TranscriptView* m_transcript = nullptr;
    QuantizationView* m_quantization = nullptr;
    TransferTimelineView* m_transfers = nullptr;
    ChannelErrorView* m_channelErrors = nullptr;
    MemoryView* m_memory = nullptr;
    CompareView* m_compare = nullptr;
    BlockPoolView* m_pool = nullptr;
    RequestLanesView* m_lanes = nullptr;
    BlockTableView* m_blockTable = nullptr;
    QWidget* m_serving = nullptr;
    ServerCacheView* m_serverView = nullptr;
    QDockWidget* m_metricsDock = nullptr;
    QDockWidget* m_compareDock = nullptr;
    QTabWidget* m_tabs = nullptr;
    QStackedWidget* m_central = nullptr;
    QWidget* m_views = nullptr;
    WelcomePage* m_welcome = nullptr;
    TourPanel* m_tourPanel = nullptr;
    QDockWidget* m_transfersDock = nullptr;
    bool m_transfersMove = false; ///< the session on screen has transfers (the Transfers dock's last state)
    QDockWidget* m_channelErrorsDock = nullptr;
    bool m_channelErrorsReported = false; ///< the session on screen has channel errors (that dock's last state)
    QDockWidget* m_tourDock = nullptr;
    QMenu* m_recentMenu = nullptr;
    QMenu* m_viewMenu = nullptr;
    QAction* m_saveAction = nullptr;
    QAction* m_exportAction = nullptr;
    QAction* m_runAction = nullptr;
    QAction* m_scoreOverlayAction = nullptr;
    QLabel* m_modelLabel = nullptr;
    QLabel* m_cacheLabel = nullptr;
    QLabel* m_deviceLabel = nullptr;
    QLabel* m_memoryLabel = nullptr;
    QLabel* m_liveLabel = nullptr;
    QProgressBar* m_progress = nullptr;
    QToolButton* m_cancel = nullptr;
};

} // namespace kvscope::gui
