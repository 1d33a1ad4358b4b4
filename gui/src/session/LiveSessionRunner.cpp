// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/session/LiveSessionRunner.h"

#include "kvscope/trace/RecordingSink.h"

#include <QMetaObject>
#include <QPointer>

#include <exception>

namespace kvscope::gui {

struct LiveSessionRunner::EngineSide {
    std::uint64_t run = 0;
    std::unique_ptr<SessionEngine> engine;
    trace::RecordingSink sink;
};

LiveSessionRunner::LiveSessionRunner(SessionEngineFactory factory, QObject* parent)
    : QObject(parent), m_factory(std::move(factory)), m_engineSide(std::make_shared<EngineSide>()) {
    qRegisterMetaType<std::shared_ptr<const StepBatch>>("std::shared_ptr<const kvscope::gui::StepBatch>");
    qRegisterMetaType<std::uint64_t>("std::uint64_t");
}

LiveSessionRunner::~LiveSessionRunner() {
    // Make a running advance loop stop at its next check; the thread member joins first.
    m_run.fetch_add(1);
    m_target.store(0);
    m_thread.dropPending();
}

void LiveSessionRunner::start(const config::RunSettings& settings) {
    const std::uint64_t run = m_run.fetch_add(1) + 1;
    m_target.store(0);
    m_thread.dropPending();
    m_busy.store(true);
    Q_EMIT busyChanged(true);
    m_thread.post("session", [this, run, settings] { rtStart(run, settings); });
}

void LiveSessionRunner::requestTokens(std::int64_t generated) {
    m_target.store(generated);
    const std::uint64_t run = m_run.load();
    if (!m_busy.exchange(true)) {
        Q_EMIT busyChanged(true);
    }
    m_thread.post("advance", [this, run] { rtAdvance(run); });
}

void LiveSessionRunner::cancel() { m_target.store(0); }

template <typename Signal, typename... Args>
void LiveSessionRunner::rtEmit(Signal signal, Args... args) {
    QPointer<LiveSessionRunner> guard(this);
    QMetaObject::invokeMethod(
        this,
        [guard, signal, args...] {
            if (guard) {
                Q_EMIT(guard->*signal)(args...);
            }
        },
        Qt::QueuedConnection);
}

void LiveSessionRunner::rtSetBusy(bool busy) {
    // Idle only when nothing else waits: a queued request will report on its own.
    if (!busy && m_thread.pendingCount() > 0) {
        return;
    }
    m_busy.store(busy);
    rtEmit(&LiveSessionRunner::busyChanged, busy);
}

void LiveSessionRunner::rtStart(std::uint64_t run, config::RunSettings settings) {
    EngineSide& side = *m_engineSide;
    side.engine.reset();
    side.sink.clear();
    side.run = run;
    bool loading = true;
    try {
        side.engine = m_factory(settings);
        loading = false;
        side.engine->start(side.sink);
        rtPublish(run, true);
    } catch (const std::exception& error) {
        side.engine.reset();
        rtEmit(&LiveSessionRunner::failed, run, QString::fromStdString(error.what()), loading);
    }
    rtSetBusy(false);
}

void LiveSessionRunner::rtAdvance(std::uint64_t run) {
    EngineSide& side = *m_engineSide;
    try {
        while (side.engine && side.run == run && run == m_run.load() && !side.engine->finished() &&
               side.engine->generatedCount() < m_target.load()) {
            side.engine->step();
            rtPublish(run, false);
        }
    } catch (const std::exception& error) {
        rtEmit(&LiveSessionRunner::failed, run, QString::fromStdString(error.what()), false);
        side.engine.reset();
    }
    rtSetBusy(false);
}

void LiveSessionRunner::rtPublish(std::uint64_t run, bool withMetadata) {
    EngineSide& side = *m_engineSide;
    auto batch = std::make_shared<StepBatch>();
    batch->run = run;
    batch->events = side.sink.takeEvents();
    if (withMetadata) {
        batch->metadata = side.engine->metadata();
    }
    batch->finished = side.engine->finished();
    rtEmit(&LiveSessionRunner::batchReady, std::shared_ptr<const StepBatch>(std::move(batch)));
}

} // namespace kvscope::gui
