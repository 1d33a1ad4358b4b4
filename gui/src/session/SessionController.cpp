// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/session/SessionController.h"

#include "kvscope/trace/PerfettoExport.h"
#include "kvscope/trace/SessionWriter.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QPointer>
#include <QStandardPaths>
#include <QtGlobal>

#include <algorithm>
#include <atomic>
#include <exception>
#include <stdexcept>

namespace kvscope::gui {
namespace {

// Views repaint at most this often while a live run grows the session.
constexpr int kGrowthIntervalMs = 33;

std::filesystem::path toPath(const QString& path) { return std::filesystem::path(path.toStdString()); }

} // namespace

QString LiveFailure::headline() const {
    switch (stage) {
    case Stage::Loading:
        return SessionController::tr("The live session could not start");
    case Stage::Prefill:
        return SessionController::tr("The live session failed at its prefill (step 0)");
    case Stage::Step:
        break;
    }
    return SessionController::tr("The live session failed at step %1").arg(step);
}

SessionController::SessionController(SessionEngineFactory engineFactory, QObject* parent)
    : QObject(parent),
      m_liveFolder(QStandardPaths::writableLocation(QStandardPaths::GenericCacheLocation) + "/kvscope/live"),
      m_state(std::make_shared<const trace::StepState>()), m_runner(std::move(engineFactory)) {
    m_growthTimer.setSingleShot(true);
    m_growthTimer.setInterval(kGrowthIntervalMs);
    connect(&m_growthTimer, &QTimer::timeout, this, &SessionController::flushGrowth);
    connect(&m_runner, &LiveSessionRunner::batchReady, this, &SessionController::onBatch);
    connect(&m_runner, &LiveSessionRunner::failed, this, &SessionController::onFailed);
    connect(&m_runner, &LiveSessionRunner::busyChanged, this, &SessionController::liveStateChanged);
}

SessionController::~SessionController() {
    discardSpill();
}

void SessionController::resetSession(Mode mode, const QString& name) {
    discardSpill();
    m_timeline.clear();
    m_paged.clear();
    m_speculation.reset();
    m_server.clear();
    m_metadata = trace::SessionMetadata{};
    m_mode = mode;
    m_name = name;
    m_damage.clear();
    m_step = 0;
    m_state = std::make_shared<const trace::StepState>();
    m_followLatest = true;
    m_liveFinished = false;
    m_failure.reset();
    m_growthPending = false;
    m_growthTimer.stop();
}

QString SessionController::readFile(const QString& path, trace::SessionContents& contents, trace::Timeline& timeline) {
    try {
        timeline = trace::Timeline::openFile(toPath(path), contents);
    } catch (const std::exception& error) {
        return QString::fromStdString(error.what());
    }
    return {};
}

QString SessionController::openFile(const QString& path) {
    trace::SessionContents contents;
    trace::Timeline timeline;
    const QString error = readFile(path, contents, timeline);
    return error.isEmpty() ? load(path, contents, std::move(timeline)) : error;
}

void SessionController::openFileInBackground(const QString& path) {
    const std::uint64_t request = ++m_openRequest;
    QPointer<SessionController> guard(this);
    m_loader.post("open", [this, guard, path, request] {
        auto contents = std::make_shared<trace::SessionContents>();
        auto timeline = std::make_shared<trace::Timeline>();
        const QString error = readFile(path, *contents, *timeline);
        QMetaObject::invokeMethod(
            this,
            [guard, path, request, contents, timeline, error] {
                if (!guard || request != guard->m_openRequest) {
                    return;
                }
                const QString problem = error.isEmpty() ? guard->load(path, *contents, std::move(*timeline)) : error;
                Q_EMIT guard->fileOpened(path, problem);
            },
            Qt::QueuedConnection);
    });
}

QString SessionController::load(const QString& path, const trace::SessionContents& contents, trace::Timeline timeline) {
    if (timeline.eventCount() == 0) {
        return tr("%1 holds no intact step%2").arg(path, contents.damage.empty() ? QString()
                                                                               : ": " + QString::fromStdString(contents.damage));
    }
    m_runner.cancel();
    resetSession(Mode::Replay, QFileInfo(path).fileName());
    m_metadata = contents.metadata;
    m_timeline = std::move(timeline);
    loaded();
    if (!contents.damage.empty()) {
        m_damage = tr("Damaged file: opened its %1 intact steps. %2")
                       .arg(contents.intactSteps)
                       .arg(QString::fromStdString(contents.damage));
    }
    return {};
}

void SessionController::setRecordedSession(const trace::SessionMetadata& metadata, std::vector<trace::Event> events,
                                           const QString& name) {
    m_runner.cancel();
    resetSession(Mode::Replay, name);
    m_metadata = metadata;
    m_timeline.emitAll(events);
    loaded();
}

void SessionController::loaded() {
    m_paged.extend(m_timeline);
    m_speculation.update(m_timeline);
    m_server.extend(m_timeline);
    m_liveFinished = true;
    m_state = m_timeline.stepCount() > 0 ? m_timeline.snapshotAt(0) : std::make_shared<const trace::StepState>();
    Q_EMIT sessionLoaded();
    Q_EMIT stepChanged(m_step);
}

template <typename Write>
QString SessionController::writeSession(const QString& path, const QString& nothingToWrite, Write write) const {
    if (m_timeline.eventCount() == 0) {
        return nothingToWrite;
    }
    try {
        write(toPath(path));
    } catch (const std::exception& error) {
        return QString::fromStdString(error.what());
    }
    return {};
}

QString SessionController::saveAs(const QString& path) const {
    // A step at a time: a long file-backed session is saved without holding its events.
    return writeSession(path, tr("There is no session to save: open a file or start a new session first"),
                        [this](const std::filesystem::path& file) {
                            trace::SessionWriter::save(file, m_metadata, [this](trace::EventSink& sink) {
                                m_timeline.replayInto(sink);
                            });
                        });
}

QString SessionController::exportPerfetto(const QString& path) const {
    return writeSession(path, tr("There is no session to export: open a file or start a new session first"),
                        [this](const std::filesystem::path& file) {
                            trace::PerfettoExport::write(file, m_metadata, m_timeline.collectEvents());
                        });
}

QString SessionController::liveFile() const {
    return m_spill ? QString::fromStdString(m_spill->path().string()) : QString();
}

void SessionController::startSpill() {
    // The run's number in this process as well as its time and process: a compared pair of live runs starts
    // within the same millisecond, and the second file must not truncate the first.
    static std::atomic<int> runs{0};
    const QString name =
        QStringLiteral("live-%1-%2-%3.kvsess")
            .arg(QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss-zzz")))
            .arg(QCoreApplication::applicationPid())
            .arg(++runs);
    try {
        if (!QDir().mkpath(m_liveFolder)) {
            throw std::runtime_error("cannot create the folder " + m_liveFolder.toStdString());
        }
        m_spill = std::make_unique<trace::SessionSpill>(toPath(QDir(m_liveFolder).filePath(name)), m_metadata,
                                                        m_timeline);
    } catch (const std::exception& error) {
        // The run still works, held in memory: long runs then grow the process instead of a file.
        m_spill.reset();
        m_timeline.clear();
        qWarning("kvscope: the live session is kept in memory, not recorded to %s: %s",
                 qPrintable(m_liveFolder), error.what());
    }
}

void SessionController::discardSpill() {
    if (!m_spill) {
        return;
    }
    const std::filesystem::path file = m_spill->path();
    m_spill.reset();
    std::error_code ignored;
    std::filesystem::remove(file, ignored);
}

void SessionController::startLive(const config::RunSettings& settings, Generation generation) {
    if (!canRunLive()) {
        Q_EMIT errorOccurred(tr("This build has no engine: live sessions are not available"));
        return;
    }
    resetSession(Mode::Live, tr("live"));
    m_settings = settings;
    m_runner.start(settings);
    if (generation == Generation::ToTheEnd) {
        m_runner.requestTokens(settings.tokens);
    }
    Q_EMIT sessionLoaded();
    Q_EMIT stepChanged(m_step);
    Q_EMIT liveStateChanged();
}

void SessionController::runToEnd() {
    if (m_mode != Mode::Live || m_liveFinished) {
        return;
    }
    m_followLatest = true;
    m_runner.requestTokens(m_settings.tokens);
}

void SessionController::cancelRun() {
    m_runner.cancel();
    Q_EMIT liveStateChanged();
}

void SessionController::waitForEngine() {
    // Each batch is delivered by a queued call, so idle + processing events drains everything.
    for (int round = 0; round < 1000; ++round) {
        m_runner.waitIdle();
        QCoreApplication::processEvents();
        if (!m_runner.busy()) {
            break;
        }
    }
    flushGrowth();
}

void SessionController::onBatch(const std::shared_ptr<const StepBatch>& batch) {
    if (m_mode != Mode::Live || batch->run != m_runner.currentRun() || m_failure) {
        return;
    }
    if (m_timeline.eventCount() == 0 && !batch->metadata.model.empty()) {
        m_metadata = batch->metadata;
        m_name = QString::fromStdString(m_metadata.model) + tr(" (live)");
        startSpill();
    }
    if (m_spill) {
        try {
            for (const trace::Event& event : batch->events) {
                m_spill->emit(event);
            }
            m_spill->flush();
            if (batch->finished) {
                m_spill->finish();
            }
        } catch (const std::exception& error) {
            // The steps already on disk stay viewable; the run cannot go on without a place for its events.
            m_runner.cancel();
            m_paged.extend(m_timeline);
            m_speculation.update(m_timeline);
            m_server.extend(m_timeline);
            m_growthPending = true;
            onFailed(batch->run,
                     tr("kvscope could not record the live session to %1: %2. Free some disk space, "
                        "or start the session again.")
                         .arg(liveFile(), QString::fromStdString(error.what())),
                     false);
            return;
        }
    } else {
        m_timeline.emitAll(batch->events);
    }
    m_paged.extend(m_timeline);
    m_speculation.update(m_timeline);
    m_server.extend(m_timeline);
    m_liveFinished = batch->finished;
    if (!m_growthPending) {
        m_growthPending = true;
        m_growthTimer.start();
    }
}

void SessionController::flushGrowth() {
    if (!m_growthPending) {
        return;
    }
    m_growthPending = false;
    m_growthTimer.stop();
    Q_EMIT sessionGrew(m_timeline.stepCount());
    if (m_followLatest && m_timeline.stepCount() > 0) {
        m_step = m_timeline.stepCount() - 1;
        m_state = m_timeline.snapshotAt(m_step);
        Q_EMIT stepChanged(m_step);
    }
    Q_EMIT liveStateChanged();
}

void SessionController::onFailed(std::uint64_t run, const QString& message, bool loading) {
    if (run != m_runner.currentRun()) {
        return;
    }
    // Batches before the failure were queued ahead of it: the timeline holds every step that succeeded.
    flushGrowth();
    const std::int64_t step = m_timeline.stepCount();
    m_failure = LiveFailure{loading     ? LiveFailure::Stage::Loading
                            : step == 0 ? LiveFailure::Stage::Prefill
                                        : LiveFailure::Stage::Step,
                            step, message};
    m_liveFinished = true;
    Q_EMIT liveStateChanged();
    Q_EMIT errorOccurred(message);
}

void SessionController::setCurrentStep(std::int64_t step) {
    const std::int64_t count = m_timeline.stepCount();
    if (count == 0) {
        return;
    }
    step = std::clamp<std::int64_t>(step, 0, count - 1);
    m_followLatest = step == count - 1;
    if (step == m_step && m_state->step == step && !m_state->layers.empty()) {
        return;
    }
    std::shared_ptr<const trace::StepState> state;
    try {
        state = m_timeline.snapshotAt(step);
    } catch (const std::exception& error) {
        // A file-backed session whose file was damaged or rewritten after it was opened: stay where we are.
        Q_EMIT errorOccurred(QString::fromStdString(error.what()));
        return;
    }
    m_step = step;
    m_state = std::move(state);
    Q_EMIT stepChanged(step);
}

void SessionController::stepForward() {
    const std::int64_t count = m_timeline.stepCount();
    if (m_step + 1 < count) {
        setCurrentStep(m_step + 1);
        return;
    }
    if (m_mode == Mode::Live && !m_liveFinished && count > 0) {
        m_followLatest = true;
        // One token beyond what exists or is already requested (a step holds one generated token);
        // the engine thread coalesces bursts.
        m_runner.requestTokens(std::max(m_runner.target(), count) + 1);
    }
}

void SessionController::stepBackward() { setCurrentStep(m_step - 1); }

void SessionController::goToStart() { setCurrentStep(0); }

void SessionController::goToEnd() { setCurrentStep(m_timeline.stepCount() - 1); }

std::shared_ptr<const trace::StepState> SessionController::previousState() const {
    if (m_step <= 0 || m_timeline.stepCount() == 0) {
        return nullptr;
    }
    return m_timeline.snapshotAt(m_step - 1);
}

} // namespace kvscope::gui
