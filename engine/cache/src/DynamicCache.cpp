// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/DynamicCache.h"

#include "kvscope/cache/CacheError.h"
#include "kvscope/cache/DynamicIndexedLayer.h"
#include "kvscope/cache/DynamicLayer.h"
#include "kvscope/cache/DynamicSlidingWindowLayer.h"
#include "kvscope/cache/LinearAttentionAndFullAttentionLayer.h"
#include "kvscope/cache/LinearAttentionAndSlidingWindowAttentionLayer.h"
#include "kvscope/cache/LinearAttentionLayer.h"

namespace kvscope::cache {
namespace {

bool isLinearAttentionType(const std::string& type) {
    // "moe" layers need no cache; the reference maps them to linear-attention layers so that
    // attention-only queries skip them.
    return type == "mamba" || type == "conv" || type == "linear_attention" || type == "moe";
}

std::vector<std::unique_ptr<CacheLayer>> buildLayers(const std::optional<config::ModelConfig>& config) {
    return config ? DynamicCache::layersFor(*config) : std::vector<std::unique_ptr<CacheLayer>>{};
}

} // namespace

std::vector<std::unique_ptr<CacheLayer>> DynamicCache::layersFor(const config::ModelConfig& config) {
    // `sliding_window or attention_chunk_size`: a zero or absent window falls back to the chunk size.
    std::optional<int64_t> window = config.slidingWindow;
    if (!window || *window == 0) {
        window = config.attentionChunkSize;
    }
    std::vector<std::unique_ptr<CacheLayer>> layers;
    for (const std::string& type : config.dynamicLayerTypes()) {
        if (type == "sliding_attention" || type == "chunked_attention") {
            if (!window) {
                throw CacheError(ErrorKind::Type, "layer type `" + type +
                                                       "` needs `sliding_window` or `attention_chunk_size` in the "
                                                       "config, and neither is set");
            }
            layers.push_back(std::make_unique<DynamicSlidingWindowLayer>(*window));
        } else if (isLinearAttentionType(type)) {
            layers.push_back(std::make_unique<LinearAttentionLayer>());
        } else if (type == "hybrid") {
            layers.push_back(std::make_unique<LinearAttentionAndFullAttentionLayer>());
        } else if (type == "hybrid_sliding") {
            // A Transformers 5.18 type (the seed builds a DynamicLayer for it, as for any type it does not know).
            if (!config.slidingWindow) {
                throw CacheError(ErrorKind::Type, "layer type `hybrid_sliding` needs `sliding_window` in the config, "
                                                  "and it is not set");
            }
            layers.push_back(std::make_unique<LinearAttentionAndSlidingWindowAttentionLayer>(*config.slidingWindow));
        } else if (type == "indexed_attention") {
            // DeepSeek-V3.2's sparse attention (5.18): a DynamicLayer with an indexer key cache.
            layers.push_back(std::make_unique<DynamicIndexedLayer>());
        } else {
            layers.push_back(std::make_unique<DynamicLayer>());
        }
    }
    return layers;
}

DynamicCache::DynamicCache(const std::optional<config::ModelConfig>& config, Offloading offloading)
    : Cache(buildLayers(config), offloading) {
    if (m_layers.empty()) {
        m_layerToReplicate = [] { return std::make_unique<DynamicLayer>(); };
    }
}

} // namespace kvscope::cache
