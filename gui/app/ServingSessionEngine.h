// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gui/session/SessionEngine.h"

#include <memory>

namespace kvscope::app {

// The GUI's SessionEngine for a serving run: a workload served by serving::ServingLoop over a paged pool,
// one scheduler step per step() (as `kvscope-cli serve` runs it, recording the same events).
class ServingSessionEngine final : public gui::SessionEngine {
public:
    // Loads the model and the workload; throws naming the bad setting and the allowed values.
    explicit ServingSessionEngine(const config::RunSettings& settings);
    ~ServingSessionEngine() override;

    void start(trace::EventSink& sink) override;
    bool step() override;
    bool finished() const override;
    std::int64_t generatedCount() const override;
    trace::SessionMetadata metadata() const override;

private:
    struct State;
    std::unique_ptr<State> m_state;
};

} // namespace kvscope::app
