#include "kvscope/runtime/LiveSession.h"

#include "kvscope/config/ModelConfig.h"
#include "kvscope/model/ByteTokenizer.h"
#include "kvscope/model/LanguageModel.h"
#include "kvscope/model/ModelLoader.h"
#include "kvscope/runtime/GenerationError.h"
#include "kvscope/runtime/Generator.h"
#include "kvscope/runtime/ModelSource.h"
#include "kvscope/runtime/PresetCatalog.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <chrono>

namespace kvscope::runtime {
namespace {

CacheOptions cacheOptions(const LiveSessionSettings& settings) {
    CacheOptions cache;
    cache.kind = settings.cacheKind;
    cache.backend = settings.backend;
    cache.nbits = settings.nbits;
    cache.groupSize = settings.groupSize;
    cache.residualLength = settings.residualLength;
    cache.maxCacheLen = settings.maxCacheLen;
    return cache;
}

// Live sessions decode greedily.
GenerationOptions generationOptions(const LiveSessionSettings& settings) {
    GenerationOptions generation;
    generation.maxNewTokens = settings.tokens;
    generation.seed = settings.seed;
    return generation;
}

void validate(const LiveSessionSettings& settings) {
    const int sources = !settings.preset.empty() + !settings.configPath.empty() + !settings.checkpointDir.empty();
    if (sources > 1) {
        throw GenerationError("give one model source: a preset, a config.json or a checkpoint folder");
    }
    const std::array<const char*, 4> kinds{"dynamic", "static", "quantized", "offloaded"};
    if (std::find(kinds.begin(), kinds.end(), settings.cacheKind) == kinds.end()) {
        throw GenerationError("unknown cache kind `" + settings.cacheKind + "` (allowed: " +
                              CacheFactory::allowedKinds() + ")");
    }
    if (settings.tokens < 1) {
        throw GenerationError("tokens must be at least 1, got " + std::to_string(settings.tokens));
    }
    if (settings.device != "cpu" && settings.device != "cuda") {
        throw GenerationError("unknown device `" + settings.device + "` (allowed: cpu, cuda)");
    }
}

} // namespace

struct LiveSession::Impl {
    LiveSessionSettings settings;
    std::string modelName;
    nlohmann::json source;
    std::unique_ptr<model::LanguageModel> model;
    std::unique_ptr<Generator> generator;
    std::int64_t createdUnixNs = 0;
};

LiveSession::LiveSession(LiveSessionSettings settings) : m_impl(std::make_unique<Impl>()) {
    validate(settings);
    Impl& impl = *m_impl;
    impl.settings = std::move(settings);
    const LiveSessionSettings& s = impl.settings;
    const at::Device device = model::ModelLoader::device(s.device);
    ModelSource::Loaded loaded = ModelSource::load(s.preset, s.configPath, s.checkpointDir, s.weightSeed, device);
    impl.model = std::move(loaded.model);
    impl.modelName = std::move(loaded.name);
    impl.source = std::move(loaded.source);
    impl.createdUnixNs = std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
}

LiveSession::~LiveSession() = default;

std::vector<std::string> LiveSession::presetNames() { return PresetCatalog().names(); }

std::string LiveSession::defaultPreset() { return PresetCatalog::defaultPreset(); }

bool LiveSession::cudaAvailable() {
    try {
        model::ModelLoader::device("cuda");
        return true;
    } catch (const std::exception&) {
        return false;
    }
}

void LiveSession::start(trace::EventSink& sink) {
    if (m_impl->generator) {
        throw GenerationError("the live session has already started");
    }
    const LiveSessionSettings& s = m_impl->settings;
    m_impl->generator = std::make_unique<Generator>(*m_impl->model, cacheOptions(s), generationOptions(s), &sink);
    m_impl->generator->prefill(model::ByteTokenizer::encode(s.prompt));
}

bool LiveSession::step() {
    if (!m_impl->generator) {
        throw GenerationError("start the live session before stepping it");
    }
    if (m_impl->generator->finished()) {
        return false;
    }
    m_impl->generator->step();
    return true;
}

bool LiveSession::started() const { return m_impl->generator != nullptr; }

bool LiveSession::finished() const { return m_impl->generator && m_impl->generator->finished(); }

std::int64_t LiveSession::generatedCount() const {
    return m_impl->generator ? m_impl->generator->generatedCount() : 0;
}

std::int64_t LiveSession::layerCount() const { return m_impl->model->architecture().numLayers(); }

trace::SessionMetadata LiveSession::metadata() const {
    const LiveSessionSettings& s = m_impl->settings;
    trace::SessionMetadata metadata;
    metadata.kvscopeVersion = KVSCOPE_VERSION;
    metadata.model = m_impl->modelName;
    const model::Architecture& architecture = m_impl->model->architecture();
    metadata.modelConfigJson = architecture.config().toJson().dump();
    metadata.cacheKind = s.cacheKind;
    // The same record as `kvscope-cli run --out` writes, so files from either compare alike.
    const GenerationOptions generation = generationOptions(s);
    nlohmann::json cache = CacheFactory::describe(cacheOptions(s), architecture.headDim());
    cache.update({{"tokens", generation.maxNewTokens}, {"beams", generation.beams},
                  {"temperature", generation.temperature}, {"top_k", generation.topK}, {"source", m_impl->source}});
    metadata.cacheSettingsJson = cache.dump();
    metadata.device = s.device;
    metadata.seed = s.seed;
    metadata.prompt = s.prompt;
    metadata.createdUnixNs = m_impl->createdUnixNs;
    return metadata;
}

const LiveSessionSettings& LiveSession::settings() const { return m_impl->settings; }

} // namespace kvscope::runtime
