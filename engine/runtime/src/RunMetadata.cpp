// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/runtime/RunMetadata.h"

#include "kvscope/config/ModelConfig.h"
#include "kvscope/model/LanguageModel.h"

#include <chrono>

namespace kvscope::runtime {

trace::SessionMetadata RunMetadata::build(const ModelSource::Loaded& loaded, const config::RunSettings& run,
                                          const TextCodec& text, const std::vector<std::int64_t>& promptIds,
                                          std::int64_t createdUnixNs) {
    const model::Architecture& architecture = loaded.model->architecture();
    trace::SessionMetadata metadata;
    metadata.kvscopeVersion = KVSCOPE_VERSION;
    metadata.model = loaded.name;
    metadata.modelConfigJson = architecture.config().toJson().dump();
    metadata.cacheKind = config::toString(run.cache.kind);
    nlohmann::json settings = CacheFactory::describe(run.cache, architecture.headDim());
    settings.update({{"tokens", run.tokens}, {"beams", run.beams}, {"temperature", run.temperature},
                     {"top_k", run.topK}, {"source", loaded.source}});
    if (run.promptLookupNumTokens > 0) {
        settings["prompt_lookup_num_tokens"] = run.promptLookupNumTokens;
    }
    if (!run.assistantModel.empty()) {
        settings["assistant_model"] = run.assistantModel;
        settings["num_assistant_tokens"] = run.numAssistantTokens;
    }
    if (!run.press.name.empty()) {
        // The press travels with the cache's settings (sessions/FORMAT.md 1.2).
        settings["press"] = run.press.toJson();
    }
    metadata.cacheSettingsJson = settings.dump();
    metadata.device = config::toString(run.device);
    metadata.seed = run.seed;
    metadata.prompt = run.prompt;
    metadata.createdUnixNs = createdUnixNs;
    metadata.tokenizer = text.name();
    for (const std::int64_t id : promptIds) {
        metadata.promptPieces.push_back(text.piece(id));
    }
    for (int64_t layer = 0; layer < architecture.numLayers(); ++layer) {
        const bool chunked = architecture.attentionKind(layer) == model::AttentionKind::ChunkedAttention;
        metadata.attentionChunkSizes.push_back(chunked ? architecture.window(layer) : 0);
    }
    return metadata;
}

std::int64_t RunMetadata::nowUnixNs() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

} // namespace kvscope::runtime
