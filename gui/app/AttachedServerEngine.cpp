// SPDX-License-Identifier: GPL-3.0-or-later
#include "AttachedServerEngine.h"

#include "kvscope/attach/ServerAttachment.h"
#include "kvscope/config/ConfigError.h"

namespace kvscope::app {

AttachedServerEngine::AttachedServerEngine(const config::RunSettings& settings) : m_settings(settings) {
    if (!settings.attach) {
        throw config::ConfigError("an attached session needs the server's KV event endpoint");
    }
    config::validate(settings);
    m_metadata = attach::ServerAttachment::sessionMetadata(*settings.attach, settings.tokenizerPath);
}

AttachedServerEngine::~AttachedServerEngine() = default;

void AttachedServerEngine::start(trace::EventSink& sink) {
    m_attachment = std::make_unique<attach::ServerAttachment>(*m_settings.attach, sink, m_settings.tokenizerPath);
    m_started = std::chrono::steady_clock::now();
    // The catch-up: what the server still buffers comes with the first poll.
    m_attachment->poll(kPollMs);
}

bool AttachedServerEngine::step() {
    if (!m_attachment || finished()) {
        return false;
    }
    m_attachment->poll(kPollMs);
    return true;
}

bool AttachedServerEngine::finished() const {
    const double seconds = m_settings.attach->seconds;
    return seconds > 0 &&
           std::chrono::duration<double>(std::chrono::steady_clock::now() - m_started).count() >= seconds;
}

std::int64_t AttachedServerEngine::generatedCount() const {
    return m_attachment ? m_attachment->steps() : 0;
}

} // namespace kvscope::app
