#include "kvscope/runtime/LiveSession.h"

#include "kvscope/cache/DeviceSupport.h"
#include "kvscope/model/ByteTokenizer.h"
#include "kvscope/model/LanguageModel.h"
#include "kvscope/model/ModelLoader.h"
#include "kvscope/runtime/GenerationError.h"
#include "kvscope/runtime/Generator.h"
#include "kvscope/runtime/ModelSource.h"
#include "kvscope/runtime/PresetCatalog.h"
#include "kvscope/runtime/RunMetadata.h"

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
    if (!CacheFactory::isKnownKind(settings.cacheKind)) {
        throw GenerationError("unknown cache kind `" + settings.cacheKind + "` (allowed: " +
                              CacheFactory::allowedKinds() + ")");
    }
    if (settings.tokens < 1) {
        throw GenerationError("tokens must be at least 1, got " + std::to_string(settings.tokens));
    }
}

} // namespace

struct LiveSession::Impl {
    LiveSessionSettings settings;
    ModelSource::Loaded loaded;
    std::unique_ptr<Generator> generator;
    std::int64_t createdUnixNs = 0;
};

LiveSession::LiveSession(LiveSessionSettings settings) : m_impl(std::make_unique<Impl>()) {
    validate(settings);
    Impl& impl = *m_impl;
    impl.settings = std::move(settings);
    const LiveSessionSettings& s = impl.settings;
    const at::Device device = model::ModelLoader::device(s.device);
    impl.loaded = ModelSource::load(s.preset, s.configPath, s.checkpointDir, s.weightSeed, device);
    impl.createdUnixNs = RunMetadata::nowUnixNs();
}

LiveSession::~LiveSession() = default;

std::vector<std::string> LiveSession::presetNames() { return PresetCatalog().names(); }

std::string LiveSession::defaultPreset() { return PresetCatalog::defaultPreset(); }

bool LiveSession::cudaAvailable() { return cache::DeviceSupport::refusal("cuda").empty(); }

void LiveSession::start(trace::EventSink& sink) {
    if (m_impl->generator) {
        throw GenerationError("the live session has already started");
    }
    const LiveSessionSettings& s = m_impl->settings;
    m_impl->generator = std::make_unique<Generator>(*m_impl->loaded.model, cacheOptions(s), generationOptions(s), &sink);
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

std::int64_t LiveSession::layerCount() const { return m_impl->loaded.model->architecture().numLayers(); }

trace::SessionMetadata LiveSession::metadata() const {
    const LiveSessionSettings& s = m_impl->settings;
    return RunMetadata::build(m_impl->loaded, cacheOptions(s), generationOptions(s), s.prompt, s.device,
                              m_impl->createdUnixNs);
}


} // namespace kvscope::runtime
