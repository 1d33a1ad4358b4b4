#pragma once

#include "kvscope/gui/SessionEngine.h"
#include "kvscope/gui/SessionSettings.h"

#include <QImage>
#include <QMainWindow>

#include <memory>

class QAction;
class QDockWidget;
class QLabel;
class QMenu;
class QProgressBar;
class QTabWidget;
class QToolButton;

namespace kvscope::gui {

class CompareView;
class EventLogView;
class LayerTableView;
class MaskView;
class MemoryView;
class OccupancyMapView;
class QuantizationView;
class SessionController;
class TransferTimelineView;
class TransportBar;
class ViewSelection;

// The inspector window: menus and toolbar (new live session, open, recent files, save as, export for
// Perfetto, compare), the transport, every view over one SessionController and one ViewSelection,
// drag and drop of session files, a status bar (model, cache, device, memory, progress with cancel),
// and window state and recent files kept in QSettings.
class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    MainWindow(SessionEngineFactory engineFactory, EngineCapabilities capabilities, QWidget* parent = nullptr);
    ~MainWindow() override;

    SessionController& session() { return *m_session; }
    SessionController& compareSession() { return *m_compareSession; }
    ViewSelection& selection() { return *m_selection; }
    TransportBar* transport() const { return m_transport; }

    // Opens a session file. Interactive: read in the background, errors shown when it is done (returns
    // empty); otherwise at once, returning the reason of a failure.
    QString openFile(const QString& path, bool interactive = true);
    void startLive(const SessionSettings& settings, bool play);
    // Compare mode: B from a file or a live run to the end; shows the compare dock.
    QString compareWithFile(const QString& path, bool interactive = true);
    void compareWithLive(const SessionSettings& settings);
    // Replots every chart now and renders the window (offscreen works); for --screenshot.
    QImage renderImage();
    QStringList recentFiles() const;
    static bool isSessionFile(const QString& path);

protected:
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;
    void closeEvent(QCloseEvent* event) override;

private:
    void createViews();
    void createActions();
    void createStatusBar();
    void newSession();
    void openDialog();
    void saveAsDialog();
    void exportDialog();
    void compareFileDialog();
    void compareLiveDialog();
    void fileOpened(const QString& path, const QString& error, bool interactive);
    void addRecentFile(const QString& path);
    void rebuildRecentMenu();
    void updateStatus();
    void updateLiveState();
    void showError(const QString& message);
    QDockWidget* addDock(QWidget* view, const QString& title, const QString& name, Qt::DockWidgetArea area);

    EngineCapabilities m_capabilities;
    std::unique_ptr<SessionController> m_session;
    std::unique_ptr<SessionController> m_compareSession;
    std::unique_ptr<ViewSelection> m_selection;
    SessionSettings m_lastSettings;
    TransportBar* m_transport = nullptr;
    OccupancyMapView* m_occupancy = nullptr;
    LayerTableView* m_layers = nullptr;
    EventLogView* m_events = nullptr;
    MaskView* m_mask = nullptr;
    QuantizationView* m_quantization = nullptr;
    TransferTimelineView* m_transfers = nullptr;
    MemoryView* m_memory = nullptr;
    CompareView* m_compare = nullptr;
    QDockWidget* m_compareDock = nullptr;
    QTabWidget* m_tabs = nullptr;
    QMenu* m_recentMenu = nullptr;
    QMenu* m_viewMenu = nullptr;
    QAction* m_saveAction = nullptr;
    QAction* m_exportAction = nullptr;
    QAction* m_runAction = nullptr;
    QLabel* m_modelLabel = nullptr;
    QLabel* m_cacheLabel = nullptr;
    QLabel* m_deviceLabel = nullptr;
    QLabel* m_memoryLabel = nullptr;
    QLabel* m_liveLabel = nullptr;
    QProgressBar* m_progress = nullptr;
    QToolButton* m_cancel = nullptr;
};

} // namespace kvscope::gui
