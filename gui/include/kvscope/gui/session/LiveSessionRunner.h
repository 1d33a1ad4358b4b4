// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gui/session/EngineThread.h"
#include "kvscope/gui/session/SessionEngine.h"
#include "kvscope/gui/session/StepBatch.h"

#include <QObject>
#include <QString>

#include <atomic>
#include <cstdint>
#include <memory>

namespace kvscope::gui {

/// Runs live sessions on one EngineThread: start() builds an engine and prefills, requestTokens()
/// advances it to a token count. Requests are tagged ("session", "advance"), so a newer one replaces a
/// waiting older one; every step comes back as a StepBatch through a queued signal, and a batch of a
/// run that was replaced is dropped. The GUI thread never waits on the engine.
class LiveSessionRunner : public QObject {
    Q_OBJECT
public:
    explicit LiveSessionRunner(SessionEngineFactory factory, QObject* parent = nullptr);
    ~LiveSessionRunner() override;

    bool canRun() const { return static_cast<bool>(m_factory); }
    /// Starts a new run (the previous one stops after its current step).
    void start(const config::RunSettings& settings);
    /// Generates until `generated` tokens exist or the run finishes.
    void requestTokens(std::int64_t generated);
    /// Stops advancing after the step in flight.
    void cancel();
    std::int64_t target() const { return m_target.load(); }
    std::uint64_t currentRun() const { return m_run.load(); }
    bool busy() const { return m_busy.load(); }
    /// Blocks until the engine thread is idle: headless screenshots and tests only.
    void waitIdle() { m_thread.waitIdle(); }

signals:
    void batchReady(std::shared_ptr<const kvscope::gui::StepBatch> batch);
    /// The run stopped with the engine's message; `loading` when the engine could not even be built (a model
    /// that does not load, settings it refuses), else it failed at its prefill or at a step.
    void failed(std::uint64_t run, const QString& message, bool loading);
    void busyChanged(bool busy);

private:
    struct EngineSide;

    /// rt*: run on the engine thread only.
    void rtStart(std::uint64_t run, config::RunSettings settings);
    void rtAdvance(std::uint64_t run);
    void rtPublish(std::uint64_t run, bool withMetadata);
    void rtSetBusy(bool busy);
    /// Emits `signal(args...)` on the GUI thread (queued; dropped if this runner is gone by then).
    template <typename Signal, typename... Args>
    void rtEmit(Signal signal, Args... args);

    SessionEngineFactory m_factory;
    std::shared_ptr<EngineSide> m_engineSide; ///< touched on the engine thread only
    std::atomic<std::uint64_t> m_run{0};
    std::atomic<std::int64_t> m_target{0};
    std::atomic<bool> m_busy{false};
    EngineThread m_thread; ///< last: joined first on destruction, while the rest still exists
};

} // namespace kvscope::gui
