// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gui/session/SessionController.h"
#include "kvscope/gui/session/SyntheticEngine.h"
#include "kvscope/trace/RecordingSink.h"
#include "kvscope/synthetic/SyntheticSession.h"

#include <QAbstractItemModelTester>
#include <QCoreApplication>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QMainWindow>
#include <QMenuBar>
#include <QString>
#include <QStringList>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <vector>
#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>

namespace kvscope::gui::testing {

// Collects qWarning/qCritical messages while alive, so a test can require that there were none
// (QAbstractItemModelTester reports problems as warnings).
class WarningCollector {
public:
    WarningCollector() {
        s_messages = &m_messages;
        m_previous = qInstallMessageHandler(&WarningCollector::handle);
    }
    ~WarningCollector() {
        qInstallMessageHandler(m_previous);
        s_messages = nullptr;
    }
    const QStringList& messages() const { return m_messages; }

private:
    static void handle(QtMsgType type, const QMessageLogContext&, const QString& message) {
        if ((type == QtWarningMsg || type == QtCriticalMsg || type == QtFatalMsg) && s_messages) {
            s_messages->append(message);
        }
    }
    inline static QStringList* s_messages = nullptr;
    QStringList m_messages;
    QtMessageHandler m_previous = nullptr;
};

inline synthetic::SyntheticSessionOptions smallSession(std::int64_t tokens = 40, bool offload = false) {
    synthetic::SyntheticSessionOptions options;
    options.layers = 8;
    options.tokens = tokens;
    options.promptTokens = 12;
    options.window = 24;
    options.residualLength = 8;
    options.offload = offload;
    return options;
}

inline std::vector<trace::Event> syntheticEvents(const synthetic::SyntheticSessionOptions& options) {
    trace::RecordingSink sink;
    synthetic::SyntheticSession::generate(options, sink);
    return sink.takeEvents();
}

inline trace::SessionMetadata syntheticMetadata(const synthetic::SyntheticSessionOptions& options) {
    return SyntheticEngine::metadataFor(options);
}

// Replays a synthetic session into the controller.
inline void loadSynthetic(SessionController& session, const synthetic::SyntheticSessionOptions& options) {
    session.setRecordedSession(syntheticMetadata(options), syntheticEvents(options), QStringLiteral("synthetic"));
}

// A synthetic session of 10 tokens (prompt 12) where a press decided on `layer` at the prefill.
inline void loadWithCompression(SessionController& session, std::int32_t layer,
                                const trace::CompressionEvent& compression) {
    const auto options = smallSession(10);
    std::vector<trace::Event> events = syntheticEvents(options);
    const auto firstDecodeEvent =
        std::find_if(events.begin(), events.end(), [](const trace::Event& event) { return event.step > 0; });
    events.insert(firstDecodeEvent, trace::Event{0, layer, 0, compression});
    session.setRecordedSession(syntheticMetadata(options), std::move(events), QStringLiteral("pressed"));
}

// A synthetic session of 10 tokens (prompt 12) with channel error reports `(step, layer, report)` filed at their
// steps, as a llama.cpp cache of `settingsJson` would have made them.
inline void loadWithChannelErrors(
    SessionController& session, const std::vector<std::tuple<std::int64_t, std::int32_t, trace::ChannelErrorEvent>>& reports,
    const std::string& settingsJson = R"({"kind": "llamacpp", "type_k": "q8_0", "type_v": "q4_0", "attn_rotation": true})") {
    const auto options = smallSession(10);
    std::vector<trace::Event> events = syntheticEvents(options);
    for (const auto& [step, layer, report] : reports) {
        const auto after = std::find_if(events.begin(), events.end(),
                                        [step = step](const trace::Event& event) { return event.step > step; });
        events.insert(after, trace::Event{step, layer, 0, report});
    }
    trace::SessionMetadata metadata = syntheticMetadata(options);
    metadata.cacheSettingsJson = settingsJson;
    session.setRecordedSession(metadata, std::move(events), QStringLiteral("llamacpp"));
}

// A speculative-decoding session over the prompt "<bos>a b a b" (5 pieces), one layer, four steps: step 0 drafts
// " x", " y" at positions 5-6 and keeps " x" (its own " z" at 6, " y" rolled back); step 1 drafts nothing (" w" at 7);
// step 2 drafts " p", " q", " r" at 8-10 and keeps them all (" s" at 11); step 3 is plain decoding (" t" at 12).
struct SpeculativeSession {
    trace::SessionMetadata metadata;
    std::vector<trace::Event> events;
};
inline SpeculativeSession speculativeSession() {
    using trace::DraftSource;
    SpeculativeSession session;
    session.metadata.model = "speculative";
    session.metadata.promptPieces = {"<bos>", "a", " b", " a", " b"};
    struct Step {
        std::int64_t ownId;
        const char* own;
        std::optional<trace::SpeculationEvent> speculation;
    };
    const Step steps[] = {
        {12, " z", trace::SpeculationEvent{DraftSource::PromptLookup, 5, {10, 11}, " x y", {2, 4}, 1, {0}, {6}}},
        {13, " w", trace::SpeculationEvent{DraftSource::PromptLookup, 7, {}, "", {}, 0, {6}, {7}}},
        {17, " s", trace::SpeculationEvent{DraftSource::PromptLookup, 8, {14, 15, 16}, " p q r", {2, 4, 6}, 3, {7}, {11}}},
        {18, " t", std::nullopt},
    };
    std::int64_t length = 0;
    std::int64_t fed = -1;
    for (std::int64_t step = 0; step < 4; ++step) {
        const Step& at = steps[step];
        session.events.push_back(trace::Event{step, -1, 0, trace::StepBeginEvent{fed, ""}});
        const std::int64_t after = at.speculation ? at.speculation->lengthsAfter.front() : length + 1;
        const std::int64_t written = at.speculation ? at.speculation->firstPosition + at.speculation->drafted() : after;
        session.events.push_back(trace::Event{step, 0, 0, trace::UpdateEvent{written - length, written, written, -1,
                                                                              written, 64 * written}});
        if (written > after) {
            session.events.push_back(trace::Event{step, 0, 0, trace::CropEvent{-(written - after), written, after}});
        }
        if (at.speculation) {
            session.events.push_back(trace::Event{step, -1, 0, *at.speculation});
        }
        session.events.push_back(trace::Event{step, -1, 0, trace::StepEndEvent{at.ownId, at.own, 1000}});
        length = after;
        fed = at.ownId;
    }
    for (std::size_t i = 0; i < session.events.size(); ++i) {
        session.events[i].sequence = i;
    }
    return session;
}

// Every tooltip a painted view gives over its whole area, every second pixel.
template <typename View> std::set<std::string> toolTipsOver(const View& view) {
    std::set<std::string> texts;
    for (int y = 0; y < view.height(); y += 2) {
        for (int x = 0; x < view.width(); x += 2) {
            const QString text = view.toolTipAt(QPoint(x, y));
            if (!text.isEmpty()) {
                texts.insert(text.toStdString());
            }
        }
    }
    return texts;
}

// A factory of SyntheticEngines of the settings' token count (8 layers, offloading when asked).
inline SessionEngineFactory syntheticFactory() {
    return [](const kvscope::config::RunSettings& settings) -> std::unique_ptr<SessionEngine> {
        return std::make_unique<SyntheticEngine>(SyntheticEngine::optionsFor(settings));
    };
}

// Where a FailingEngine throws: its factory (the model does not load), its prefill, or a later step.
enum class FailAt { Loading, Prefill, Step };

// A synthetic engine that fails as a real one does (a checkpoint cut short, a press refusing the prompt,
// an exception at step N), with the engine's message; `delayMs` before failing lets a test act first.
class FailingEngine final : public SessionEngine {
public:
    FailingEngine(const kvscope::config::RunSettings& settings, FailAt at, std::int64_t step,
                  std::string message, int delayMs)
        : m_inner(SyntheticEngine::optionsFor(settings)), m_at(at), m_step(step),
          m_message(std::move(message)), m_delayMs(delayMs) {}
    void start(trace::EventSink& sink) override {
        std::this_thread::sleep_for(std::chrono::milliseconds(m_delayMs));
        if (m_at == FailAt::Prefill) {
            throw std::runtime_error(m_message);
        }
        m_inner.start(sink);
    }
    bool step() override {
        if (m_at == FailAt::Step && m_inner.generatedCount() >= m_step) {
            throw std::runtime_error(m_message);
        }
        return m_inner.step();
    }
    bool finished() const override { return m_inner.finished(); }
    std::int64_t generatedCount() const override { return m_inner.generatedCount(); }
    trace::SessionMetadata metadata() const override { return m_inner.metadata(); }

private:
    SyntheticEngine m_inner;
    FailAt m_at;
    std::int64_t m_step;
    std::string m_message;
    int m_delayMs;
};

// Engines failing `at` (at step `step` for FailAt::Step) with `message`.
inline SessionEngineFactory failingFactory(FailAt at, std::string message, std::int64_t step = 0,
                                           int delayMs = 0) {
    return [=](const kvscope::config::RunSettings& settings) -> std::unique_ptr<SessionEngine> {
        if (at == FailAt::Loading) {
            std::this_thread::sleep_for(std::chrono::milliseconds(delayMs));
            throw std::runtime_error(message);
        }
        return std::make_unique<FailingEngine>(settings, at, step, message, delayMs);
    };
}

// Every dock of the window sits docked in the area it was made for, below the menu bar: none floats
// (the report saw Transfers come up floating over the menu bar after a failed checkpoint load).
inline void expectDocksDocked(const QMainWindow& window, const std::string& what) {
    const std::map<QString, Qt::DockWidgetArea> areas = {
        {QStringLiteral("tourDock"), Qt::RightDockWidgetArea},
        {QStringLiteral("maskDock"), Qt::RightDockWidgetArea},
        {QStringLiteral("transcriptDock"), Qt::LeftDockWidgetArea},
        {QStringLiteral("memoryDock"), Qt::RightDockWidgetArea},
        {QStringLiteral("quantizationDock"), Qt::RightDockWidgetArea},
        {QStringLiteral("transfersDock"), Qt::BottomDockWidgetArea},
        {QStringLiteral("compareDock"), Qt::BottomDockWidgetArea},
        {QStringLiteral("servingMetricsDock"), Qt::BottomDockWidgetArea},
        {QStringLiteral("channelErrorsDock"), Qt::BottomDockWidgetArea},
    };
    const QList<QDockWidget*> docks = window.findChildren<QDockWidget*>();
    EXPECT_EQ(docks.size(), static_cast<qsizetype>(areas.size())) << what;
    for (QDockWidget* dock : docks) {
        const std::string name = what + ": " + dock->objectName().toStdString();
        EXPECT_FALSE(dock->isFloating()) << name;
        EXPECT_EQ(dock->parentWidget(), &window) << name;
        const auto area = areas.find(dock->objectName());
        ASSERT_NE(area, areas.end()) << name << " is not in the table";
        EXPECT_EQ(window.dockWidgetArea(dock), area->second) << name;
        if (dock->isVisible() && window.menuBar()->isVisible()) {
            EXPECT_GE(dock->geometry().top(), window.menuBar()->geometry().bottom()) << name;
        }
    }
}

// Processes events until the predicate holds or the timeout passes; returns the predicate.
template <typename Predicate>
bool waitUntil(Predicate predicate, int timeoutMs = 10000) {
    QElapsedTimer clock;
    clock.start();
    while (!predicate() && clock.elapsed() < timeoutMs) {
        QCoreApplication::processEvents(QEventLoop::AllEvents, 10);
    }
    return predicate();
}

} // namespace kvscope::gui::testing
