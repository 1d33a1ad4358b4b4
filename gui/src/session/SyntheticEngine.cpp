// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/session/SyntheticEngine.h"

#include "kvscope/trace/RecordingSink.h"

#include <algorithm>
#include <stdexcept>

namespace kvscope::gui {

SyntheticEngine::SyntheticEngine(const synthetic::SyntheticSessionOptions& options) : m_options(options) {
    trace::RecordingSink recording;
    recording.reserve(synthetic::SyntheticSession::estimateEventCount(options));
    synthetic::SyntheticSession::generate(options, recording);
    m_events = recording.takeEvents();
    // Events arrive in step order, so the step boundaries are where the step number changes.
    for (std::size_t index = 0; index < m_events.size(); ++index) {
        while (static_cast<std::int64_t>(m_stepBegin.size()) <= m_events[index].step) {
            m_stepBegin.push_back(index);
        }
    }
    m_stepBegin.push_back(m_events.size());
}

void SyntheticEngine::start(trace::EventSink& sink) {
    if (m_sink != nullptr) {
        throw std::logic_error("the synthetic session has already started");
    }
    m_sink = &sink;
    emitStep(0);
}

bool SyntheticEngine::step() {
    if (m_sink == nullptr) {
        throw std::logic_error("start the synthetic session before stepping it");
    }
    if (finished()) {
        return false;
    }
    emitStep(m_nextStep);
    return true;
}

bool SyntheticEngine::finished() const {
    return m_sink != nullptr && m_nextStep + 1 >= static_cast<std::int64_t>(m_stepBegin.size());
}

void SyntheticEngine::emitStep(std::int64_t step) {
    const auto index = static_cast<std::size_t>(step);
    for (std::size_t event = m_stepBegin[index]; event < m_stepBegin[index + 1]; ++event) {
        m_sink->emit(m_events[event]);
    }
    m_nextStep = step + 1;
}

trace::SessionMetadata SyntheticEngine::metadataFor(const synthetic::SyntheticSessionOptions& options) {
    return synthetic::SyntheticSession::metadataFor(options);
}

synthetic::SyntheticSessionOptions SyntheticEngine::optionsFor(const config::RunSettings& settings) {
    synthetic::SyntheticSessionOptions options;
    options.layers = 8;
    options.tokens = std::max<std::int64_t>(settings.tokens - 1, 0); // the prefill makes the first token
    options.promptTokens = 16;
    options.window = 64;
    options.residualLength = settings.cache.residualLength;
    options.seed = settings.seed;
    options.offload = settings.cache.kind == config::CacheKind::Offloaded;
    return options;
}

} // namespace kvscope::gui
