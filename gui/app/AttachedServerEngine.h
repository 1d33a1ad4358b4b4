// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gui/session/SessionEngine.h"

#include <chrono>
#include <memory>

namespace kvscope::attach {
class ServerAttachment;
}

namespace kvscope::app {

/// A live session that follows a running server (kvscope --attach, File > Attach to server) instead of running a
/// model: start() subscribes and catches up, each step() waits up to kPollMs for the server's messages and
/// records one step per message (attach::ServerAttachment). It goes on until cancelled, or for the settings'
/// `seconds` when given (headless screenshots). generatedCount() is the steps recorded, so that the runner
/// asking for "more tokens" keeps following.
class AttachedServerEngine final : public gui::SessionEngine {
public:
    static constexpr int kPollMs = 200;

    /// Throws on settings without attach, a bad endpoint or metrics address, or a tokenizer that does not load.
    explicit AttachedServerEngine(const config::RunSettings& settings);
    ~AttachedServerEngine() override;

    void start(trace::EventSink& sink) override;
    bool step() override;
    bool finished() const override;
    std::int64_t generatedCount() const override;
    trace::SessionMetadata metadata() const override { return m_metadata; }

private:
    config::RunSettings m_settings;
    trace::SessionMetadata m_metadata;
    std::unique_ptr<attach::ServerAttachment> m_attachment;
    std::chrono::steady_clock::time_point m_started;
};

} // namespace kvscope::app
