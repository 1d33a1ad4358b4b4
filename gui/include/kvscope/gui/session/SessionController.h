// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gui/models/PagedHistory.h"
#include "kvscope/gui/models/SpeculationHistory.h"
#include "kvscope/gui/models/ServerCacheHistory.h"
#include "kvscope/gui/session/LiveSessionRunner.h"
#include "kvscope/gui/session/SessionEngine.h"
#include "kvscope/gui/session/StepBatch.h"
#include "kvscope/trace/SessionMetadata.h"
#include "kvscope/trace/SessionReader.h"
#include "kvscope/trace/SessionSpill.h"
#include "kvscope/trace/StepState.h"
#include "kvscope/trace/Timeline.h"

#include <QObject>
#include <QString>
#include <QTimer>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace kvscope::gui {

/// Why a live run stopped with an error: where (the engine could not be built: a model that does not load,
/// settings the press refuses; the prefill; or a later step) and the engine's message, which names the
/// problem and its fix.
struct LiveFailure {
    enum class Stage { Loading, Prefill, Step };
    Stage stage = Stage::Loading;
    /// The step that failed (0 for the prefill; the steps before it are in the session).
    std::int64_t step = 0;
    QString reason;
    /// "The live session could not start", "... failed at its prefill", "... failed at step 7".
    QString headline() const;
};

/// The session every view observes (RenderDoc's capture context): one Timeline, its metadata, the
/// current step and its StepState snapshot. Replayed files and live runs fill the same Timeline, so the
/// views have one code path: a live run is written to a session file as it runs (trace::SessionSpill, in
/// liveFolder()) and read back file-backed like a replayed one, so its memory does not grow with its length.
/// Signals: sessionLoaded (a new session, maybe still empty), sessionGrew (a live run added steps; coalesced
/// to at most one per frame), stepChanged (the current step moved).
class SessionController : public QObject {
    Q_OBJECT
public:
    enum class Mode { Empty, Replay, Live };

    explicit SessionController(SessionEngineFactory engineFactory = {}, QObject* parent = nullptr);
    ~SessionController() override;

    /// Replay. A file is opened file-backed (trace::Timeline::openFile): its steps are decoded when shown.
    /// openFile returns an empty string on success, else the reason; a damaged file opens up to
    /// the damage and damage() says what was lost.
    QString openFile(const QString& path);
    /// The same on a loader thread, so a big file does not freeze the window: fileOpened(path, error)
    /// follows (error empty once the session is loaded). A newer request supersedes an older one.
    void openFileInBackground(const QString& path);
    void setRecordedSession(const trace::SessionMetadata& metadata, std::vector<trace::Event> events,
                            const QString& name);
    QString saveAs(const QString& path) const;
    QString exportPerfetto(const QString& path) const;

    /// Live runs (only with an engine factory).
    bool canRunLive() const { return m_runner.canRun(); }
    /// Where live runs are recorded (default: the user's cache folder, kvscope/live); a run's file is removed
    /// when its session is closed (Save As keeps it), and survives a crash as an ordinary session file.
    QString liveFolder() const { return m_liveFolder; }
    void setLiveFolder(const QString& folder) { m_liveFolder = folder; }
    /// The file the current live run is recorded to; empty when it is held in memory (the folder could not
    /// be written: the reason went to the log) or there is no live run.
    QString liveFile() const;
    /// How far a new live run generates on its own: a token each time stepping passes the end, or
    /// every token up to the settings' count.
    enum class Generation { OnRequest, ToTheEnd };
    void startLive(const config::RunSettings& settings, Generation generation);
    /// Generates up to the configured token count; progress via sessionGrew and liveStateChanged.
    void runToEnd();
    void cancelRun();
    bool liveBusy() const { return m_runner.busy(); }
    bool liveFinished() const { return m_liveFinished; }
    /// Set when the live run stopped with an error (it is then finished), until the next session.
    const std::optional<LiveFailure>& liveFailure() const { return m_failure; }
    std::int64_t liveTokenTarget() const { return m_settings.tokens; }
    /// Waits for the engine thread and delivers its results: headless screenshot path and tests only.
    void waitForEngine();

    /// Navigation; steps are clamped to the session. Stepping past the end of an unfinished live run
    /// asks the engine for one more token and follows it when it arrives.
    void setCurrentStep(std::int64_t step);
    void stepForward();
    void stepBackward();
    void goToStart();
    void goToEnd();

    Mode mode() const { return m_mode; }
    QString name() const { return m_name; }
    QString damage() const { return m_damage; }
    const trace::SessionMetadata& metadata() const { return m_metadata; }
    const config::RunSettings& liveSettings() const { return m_settings; }
    const trace::Timeline& timeline() const { return m_timeline; }
    /// A serving session's requests, text, per-step changes and metrics (inactive for other sessions); kept
    /// in step with the timeline.
    const PagedHistory& paged() const { return m_paged; }
    /// A speculative-decoding session's verifications and where each step's tokens lie (empty for other
    /// sessions); kept in step with the timeline.
    const SpeculationHistory& speculation() const { return m_speculation; }
    /// An attached server's cache over the steps (inactive for other sessions); kept in step with the timeline.
    const ServerCacheHistory& server() const { return m_server; }
    std::int64_t stepCount() const { return m_timeline.stepCount(); }
    std::int64_t currentStep() const { return m_step; }
    /// Never null: an empty state before the first step.
    std::shared_ptr<const trace::StepState> state() const { return m_state; }
    /// The state after the step before the current one (for what changed); null at step 0.
    std::shared_ptr<const trace::StepState> previousState() const;

signals:
    void sessionLoaded();
    void sessionGrew(qint64 stepCount);
    void stepChanged(qint64 step);
    void liveStateChanged();
    /// A live run failed (liveFailure() says where) or could not start; `message` is the reason.
    void errorOccurred(const QString& message);
    void fileOpened(const QString& path, const QString& error);

private:
    void onBatch(const std::shared_ptr<const StepBatch>& batch);
    void onFailed(std::uint64_t run, const QString& message, bool loading);
    void flushGrowth();
    void resetSession(Mode mode, const QString& name);
    /// A recorded session is in m_timeline: the paged history, the first step, the signals.
    void loaded();
    QString load(const QString& path, const trace::SessionContents& contents, trace::Timeline timeline);
    /// Opens a session file as a file-backed timeline (its events stay on disk); the error, or empty.
    static QString readFile(const QString& path, trace::SessionContents& contents, trace::Timeline& timeline);
    /// The live run's file, once its metadata is known (the first batch); null when it cannot be created.
    void startSpill();
    /// Closes the live run's file and removes it.
    void discardSpill();
    /// Writes the session with `write(path)`; the error, or empty.
    template <typename Write>
    QString writeSession(const QString& path, const QString& nothingToWrite, Write write) const;

    trace::Timeline m_timeline;
    /// Records a live run into m_timeline's file; declared after it, so it goes first.
    std::unique_ptr<trace::SessionSpill> m_spill;
    QString m_liveFolder;
    PagedHistory m_paged;
    SpeculationHistory m_speculation;
    ServerCacheHistory m_server;
    trace::SessionMetadata m_metadata;
    config::RunSettings m_settings;
    Mode m_mode = Mode::Empty;
    QString m_name;
    QString m_damage;
    std::int64_t m_step = 0;
    std::shared_ptr<const trace::StepState> m_state;
    bool m_followLatest = true;
    bool m_liveFinished = false;
    std::optional<LiveFailure> m_failure;
    bool m_growthPending = false;
    QTimer m_growthTimer;
    LiveSessionRunner m_runner;
    std::uint64_t m_openRequest = 0;
    EngineThread m_loader; ///< reads session files; last, so it joins before the rest goes
};

} // namespace kvscope::gui
