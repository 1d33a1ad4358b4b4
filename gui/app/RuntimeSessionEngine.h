// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gui/session/SessionEngine.h"
#include "kvscope/runtime/LiveSession.h"

namespace kvscope::app {

// The GUI's SessionEngine over the LibTorch engine, through runtime::LiveSession's torch-free facade.
class RuntimeSessionEngine final : public gui::SessionEngine {
public:
    // Loads the model; throws naming the bad setting and the allowed values.
    explicit RuntimeSessionEngine(const config::RunSettings& settings);

    void start(trace::EventSink& sink) override { m_session.start(sink); }
    bool step() override { return m_session.step(); }
    bool finished() const override { return m_session.finished(); }
    std::int64_t generatedCount() const override { return m_session.generatedCount(); }
    trace::SessionMetadata metadata() const override { return m_session.metadata(); }

    static gui::EngineCapabilities capabilities();

private:
    runtime::LiveSession m_session;
};

} // namespace kvscope::app
