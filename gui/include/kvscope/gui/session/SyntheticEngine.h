// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gui/session/SessionEngine.h"
#include "kvscope/trace/Event.h"
#include "kvscope/synthetic/SyntheticSession.h"

#include <cstddef>
#include <vector>

namespace kvscope::gui {

/// A SessionEngine without a model: replays a synthetic::SyntheticSession one step per step() call, so GUI
/// tests, demos and benchmarks exercise the live code path quickly and deterministically.
class SyntheticEngine final : public SessionEngine {
public:
    explicit SyntheticEngine(const synthetic::SyntheticSessionOptions& options);

    void start(trace::EventSink& sink) override;
    bool step() override;
    bool finished() const override;
    /// Like a generator, whose prefill already picks a token: one token per step emitted.
    std::int64_t generatedCount() const override { return m_nextStep; }
    trace::SessionMetadata metadata() const override { return metadataFor(m_options); }
    /// What a session of these options records, without generating it.
    static trace::SessionMetadata metadataFor(const synthetic::SyntheticSessionOptions& options);

    /// The options config::RunSettings map to: `tokens` steps in all (prefill included, as a generator makes
    /// them), the residual length and seed carry over, offloading for cache "offloaded"; 8 layers.
    static synthetic::SyntheticSessionOptions optionsFor(const config::RunSettings& settings);

private:
    void emitStep(std::int64_t step);

    synthetic::SyntheticSessionOptions m_options;
    std::vector<trace::Event> m_events;
    std::vector<std::size_t> m_stepBegin; ///< first event of each step, plus the end
    trace::EventSink* m_sink = nullptr;
    std::int64_t m_nextStep = 0;
};

} // namespace kvscope::gui
