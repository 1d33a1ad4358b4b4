#include "kvscope/runtime/RunMetadata.h"

#include "kvscope/config/ModelConfig.h"
#include "kvscope/model/LanguageModel.h"

#include <chrono>

namespace kvscope::runtime {

trace::SessionMetadata RunMetadata::build(const ModelSource::Loaded& loaded, const CacheOptions& cache,
                                          const GenerationOptions& generation, const std::string& prompt,
                                          const std::string& device, std::int64_t createdUnixNs) {
    const model::Architecture& architecture = loaded.model->architecture();
    trace::SessionMetadata metadata;
    metadata.kvscopeVersion = KVSCOPE_VERSION;
    metadata.model = loaded.name;
    metadata.modelConfigJson = architecture.config().toJson().dump();
    metadata.cacheKind = cache.kind;
    nlohmann::json settings = CacheFactory::describe(cache, architecture.headDim());
    settings.update({{"tokens", generation.maxNewTokens}, {"beams", generation.beams},
                     {"temperature", generation.temperature}, {"top_k", generation.topK}, {"source", loaded.source}});
    metadata.cacheSettingsJson = settings.dump();
    metadata.device = device;
    metadata.seed = generation.seed;
    metadata.prompt = prompt;
    metadata.createdUnixNs = createdUnixNs;
    return metadata;
}

std::int64_t RunMetadata::nowUnixNs() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

} // namespace kvscope::runtime
