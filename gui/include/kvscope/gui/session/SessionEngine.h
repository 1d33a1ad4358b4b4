// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/config/PressDescription.h"
#include "kvscope/config/RunSettings.h"
#include "kvscope/trace/SessionMetadata.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace kvscope::trace {
class EventSink;
}

namespace kvscope::gui {

/// A generation run as the GUI drives it, on its engine thread only: start() prefills, step() makes one
/// token. The application plugs in the LibTorch-backed one; tests use SyntheticEngine. Failures throw
/// std::exception whose message the GUI shows as is.
class SessionEngine {
public:
    virtual ~SessionEngine() = default;
    /// Prefill (step 0); every event goes to `sink`, which outlives the engine.
    virtual void start(trace::EventSink& sink) = 0;
    /// One more token; false once finished (and nothing was done).
    virtual bool step() = 0;
    virtual bool finished() const = 0;
    virtual std::int64_t generatedCount() const = 0;
    virtual trace::SessionMetadata metadata() const = 0;

protected:
    SessionEngine() = default;
};

/// Makes an engine for the settings (may load a model: called on the engine thread); throws on bad settings.
using SessionEngineFactory = std::function<std::unique_ptr<SessionEngine>(const config::RunSettings&)>;

/// What the New session dialog offers, as the engine side knows it.
struct EngineCapabilities {
    std::vector<std::string> presets;
    std::string defaultPreset;
    bool cudaAvailable = false;
    /// The cache presses a run may use, with their options and defaults (runtime::LiveSession::presses).
    std::vector<config::PressDescription> presses;
    /// What a checkpoint folder or tokenizer path gives a run to speak through ("BPE tokenizer, 1001 ids
    /// (tokenizer.json)", "bytes (...)"); empty where the engine cannot tell (reading takes a moment:
    /// call it when a path is chosen, not per keystroke).
    std::function<std::string(const std::string& path)> describeTokenizer;
};

} // namespace kvscope::gui
