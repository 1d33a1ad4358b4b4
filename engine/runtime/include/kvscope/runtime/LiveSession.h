// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/config/PressDescription.h"
#include "kvscope/config/RunSettings.h"
#include "kvscope/trace/SessionMetadata.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kvscope::trace {
class EventSink;
}

namespace kvscope::model {
class LanguageModel;
}

namespace kvscope::runtime {

class CachePressHook;
class Generator;
class TextCodec;

/// The one assembly of a generation run, behind a torch-free interface for callers that must not see
/// LibTorch (the GUI): loads the model, attaches the settings' press, then prefills and steps a Generator
/// that reports every cache operation to the sink given to start(). kvscope-cli run drives it too, and
/// reads its summary through the engine-side accessors. Not thread-safe: use it from one thread (the
/// GUI's engine thread), the one its model computes on with the settings' threads.
class LiveSession {
public:
    /// What a press's defaults do on a prompt too short for them (SnapKV's window_size 64 on a 20-token
    /// prompt): kept as kvpress has them, so the press refuses, saying why (`kvscope-cli run`, for
    /// fidelity), or fitted below the prompt (the inspector; config::PressDescriptions::fitToPrompt), which
    /// the session's metadata records (its press's `fitted`) and pressNotices() says.
    enum class PressDefaults { Reference, FitToPrompt };

    /// Sets the calling thread's intra-op threads (config::computeThreads), loads the model; throws
    /// std::runtime_error naming the problem and the allowed values for a bad
    /// source, cache kind, option or an unavailable device.
    explicit LiveSession(config::RunSettings settings,
                         PressDefaults pressDefaults = PressDefaults::Reference);
    ~LiveSession();
    LiveSession(const LiveSession&) = delete;
    LiveSession& operator=(const LiveSession&) = delete;

    static std::vector<std::string> presetNames();
    static std::string defaultPreset();
    /// The cache presses a run's settings may name, with their options and defaults.
    static const std::vector<config::PressDescription>& presses();
    /// Whether `device = "cuda"` can run here (a CUDA LibTorch and a visible GPU).
    static bool cudaAvailable();
    /// What a checkpoint folder or a tokenizer path gives a run to speak through, for the New session
    /// dialog: "BPE tokenizer, 128256 ids (tokenizer.json)", "bytes (...)" for a folder without one,
    /// or "cannot read ...: <why>".
    static std::string describeTokenizer(const std::string& path);

    /// Prefills the prompt (step 0), reporting to `sink`, which must outlive the session. Once only.
    void start(trace::EventSink& sink);
    /// Generates one token; returns false once the session is finished (nothing is done then).
    bool step();
    bool started() const;
    bool finished() const;
    std::int64_t generatedCount() const;
    std::int64_t layerCount() const;
    /// Options fitted to the prompt, then what the press left alone and why (a sliding layer), one line
    /// each; empty without a press.
    std::vector<std::string> pressNotices() const;
    /// What a session file records about this run.
    trace::SessionMetadata metadata() const;
    /// Seconds the last prefill or step took (its forward pass and pick); 0 before start().
    double lastStepSeconds() const;
    /// Max |logits of the last forward pass - logits recomputed without a cache| (kvscope-cli run --check).
    double recomputeDifference();

    // The engine side, for kvscope-cli run's summary: LibTorch types, only declared here.
    const model::LanguageModel& model() const;
    const TextCodec& text() const;
    /// The model source as a session records it (ModelSource::Loaded::source).
    const nlohmann::json& source() const;
    const std::vector<std::int64_t>& promptIds() const;
    /// The press the settings ask for; null without one.
    const CachePressHook* press() const;
    /// The generator; start() first.
    const Generator& generator() const;

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

} // namespace kvscope::runtime
