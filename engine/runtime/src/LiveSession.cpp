// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/runtime/LiveSession.h"

#include "kvscope/cache/DeviceSupport.h"
#include "kvscope/model/AttachedAttentionObserver.h"
#include "kvscope/model/LanguageModel.h"
#include "kvscope/model/ModelLoader.h"
#include "kvscope/runtime/CachePressHook.h"
#include "kvscope/runtime/ComputeThreads.h"
#include "kvscope/runtime/GenerationError.h"
#include "kvscope/runtime/Generator.h"
#include "kvscope/runtime/HuggingFaceTextCodec.h"
#include "kvscope/runtime/ModelSource.h"
#include "kvscope/runtime/PresetCatalog.h"
#include "kvscope/runtime/RunMetadata.h"
#include "kvscope/config/PressDescriptions.h"

#include <filesystem>
#include <optional>

namespace kvscope::runtime {

struct LiveSession::Impl {
    config::RunSettings settings;
    ModelSource::Loaded loaded;
    /// Assisted decoding: the model drafting for `loaded` (no model otherwise).
    ModelSource::Loaded assistant;
    /// The cache press the settings ask for (null without one), attached to the model while it lives
    /// (declared after both, so it detaches first).
    std::unique_ptr<CachePressHook> press;
    std::optional<model::AttachedAttentionObserver> attached;
    std::vector<std::int64_t> promptIds;
    std::vector<std::string> fitNotices;
    std::unique_ptr<Generator> generator;
    std::int64_t createdUnixNs = 0;
    double lastStepSeconds = 0.0;

    Generator& started() {
        if (!generator) {
            throw GenerationError("start the live session before stepping it");
        }
        return *generator;
    }
};

LiveSession::LiveSession(config::RunSettings settings, PressDefaults pressDefaults)
    : m_impl(std::make_unique<Impl>()) {
    config::validate(settings);
    Impl& impl = *m_impl;
    impl.settings = std::move(settings);
    const config::RunSettings& s = impl.settings;
    // The model computes on this thread (the GUI's engine thread, the CLI's main thread) from here on.
    ComputeThreads::apply(config::computeThreads(s));
    const at::Device device = model::ModelLoader::device(s.device);
    impl.loaded = ModelSource::load(s, device);
    if (!s.assistantModel.empty()) {
        // The assistant is a model source of its own (a GGUF file or a known model) with its own tokenizer; the
        // generator refuses it unless the two vocabularies are one.
        config::RunSettings assistant = s;
        assistant.preset.clear();
        assistant.configPath.clear();
        assistant.checkpointDir.clear();
        assistant.tokenizerPath.clear();
        assistant.modelFile = s.assistantModel;
        impl.assistant = ModelSource::load(assistant, device);
    }
    impl.promptIds = s.chat ? impl.loaded.text->encodeChat(s.prompt) : impl.loaded.text->encode(s.prompt);
    if (pressDefaults == PressDefaults::FitToPrompt && !s.press.name.empty()) {
        impl.fitNotices = config::PressDescriptions::fitToPrompt(
            impl.settings.press, static_cast<std::int64_t>(impl.promptIds.size()));
    }
    impl.press = CachePressHook::forRun(impl.loaded.model->architecture(), s);
    impl.attached.emplace(*impl.loaded.model, impl.press.get());
    impl.createdUnixNs = RunMetadata::nowUnixNs();
}

LiveSession::~LiveSession() = default;

std::vector<std::string> LiveSession::presetNames() { return PresetCatalog().names(); }

std::string LiveSession::defaultPreset() { return PresetCatalog::defaultPreset(); }

const std::vector<config::PressDescription>& LiveSession::presses() { return press::PressCatalog::presses(); }

std::vector<std::string> LiveSession::pressNotices() const {
    std::vector<std::string> notices = m_impl->fitNotices;
    if (m_impl->press) {
        notices.insert(notices.end(), m_impl->press->notices().begin(), m_impl->press->notices().end());
    }
    return notices;
}

bool LiveSession::cudaAvailable() { return cache::DeviceSupport::refusal(config::ComputeDevice::Cuda).empty(); }

std::string LiveSession::describeTokenizer(const std::string& path) {
    const std::filesystem::path location(path);
    if (std::filesystem::is_directory(location) && !HuggingFaceTextCodec::folderHasTokenizer(location)) {
        return "bytes (the folder brings no tokenizer.json or tokenizer.model: one token per byte)";
    }
    try {
        const auto text = HuggingFaceTextCodec::fromPath(location);
        const std::filesystem::path file = !std::filesystem::is_directory(location) ? location.filename()
                                           : std::filesystem::is_regular_file(location / "tokenizer.json")
                                               ? std::filesystem::path("tokenizer.json")
                                               : std::filesystem::path("tokenizer.model");
        return text->modelType() + " tokenizer, " + std::to_string(text->vocabSize()) + " ids (" + file.string() + ")";
    } catch (const std::exception& error) {
        return "cannot read the tokenizer of " + path + ": " + error.what();
    }
}

void LiveSession::start(trace::EventSink& sink) {
    if (m_impl->generator) {
        throw GenerationError("the live session has already started");
    }
    const config::RunSettings& s = m_impl->settings;
    GenerationOptions options = GenerationOptions::of(s, *m_impl->loaded.text);
    options.assistant = m_impl->assistant.model.get();
    m_impl->generator = std::make_unique<Generator>(*m_impl->loaded.model, s.cache, options, &sink,
                                                    m_impl->loaded.text.get());
    m_impl->lastStepSeconds = m_impl->generator->prefill(m_impl->promptIds).seconds;
}

bool LiveSession::step() {
    Generator& generator = m_impl->started();
    if (generator.finished()) {
        return false;
    }
    m_impl->lastStepSeconds = generator.step().seconds;
    return true;
}

bool LiveSession::started() const { return m_impl->generator != nullptr; }

bool LiveSession::finished() const { return m_impl->generator && m_impl->generator->finished(); }

std::int64_t LiveSession::generatedCount() const {
    return m_impl->generator ? m_impl->generator->generatedCount() : 0;
}

std::int64_t LiveSession::layerCount() const { return m_impl->loaded.model->architecture().numLayers(); }

trace::SessionMetadata LiveSession::metadata() const {
    return RunMetadata::build(m_impl->loaded, m_impl->settings, *m_impl->loaded.text, m_impl->promptIds,
                              m_impl->createdUnixNs);
}

double LiveSession::lastStepSeconds() const {
    return m_impl->lastStepSeconds;
}

double LiveSession::recomputeDifference() {
    return m_impl->started().recomputeDifference();
}

const model::LanguageModel& LiveSession::model() const {
    return *m_impl->loaded.model;
}

const TextCodec& LiveSession::text() const {
    return *m_impl->loaded.text;
}

const nlohmann::json& LiveSession::source() const {
    return m_impl->loaded.source;
}

const std::vector<std::int64_t>& LiveSession::promptIds() const {
    return m_impl->promptIds;
}

const CachePressHook* LiveSession::press() const {
    return m_impl->press.get();
}

const Generator& LiveSession::generator() const {
    return m_impl->started();
}

} // namespace kvscope::runtime
