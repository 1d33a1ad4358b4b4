// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/StaticCache.h"

#include "kvscope/cache/CacheError.h"
#include "kvscope/cache/LinearAttentionAndStaticFullAttentionLayer.h"
#include "kvscope/cache/LinearAttentionAndStaticSlidingWindowAttentionLayer.h"
#include "kvscope/cache/LinearAttentionLayer.h"
#include "kvscope/cache/StaticIndexedLayer.h"
#include "kvscope/cache/StaticLayer.h"
#include "kvscope/cache/StaticSlidingWindowLayer.h"

namespace kvscope::cache {

std::vector<std::unique_ptr<CacheLayer>> StaticCache::layersFor(const config::ModelConfig& config, int64_t maxCacheLen) {
    std::vector<std::unique_ptr<CacheLayer>> layers;
    for (const std::string& type : config.staticLayerTypes()) {
        if (type == "sliding_attention" || type == "chunked_attention") {
            const bool sliding = type == "sliding_attention";
            const std::optional<int64_t>& window = sliding ? config.slidingWindow : config.attentionChunkSize;
            if (!window) {
                throw CacheError(ErrorKind::Type, std::string("layer type `") + type + "` needs `" +
                                                      (sliding ? "sliding_window" : "attention_chunk_size") +
                                                      "` in the config, and it is not set");
            }
            layers.push_back(std::make_unique<StaticSlidingWindowLayer>(maxCacheLen, *window));
        } else if (type == "mamba" || type == "conv" || type == "linear_attention" || type == "moe") {
            layers.push_back(std::make_unique<LinearAttentionLayer>());
        } else if (type == "hybrid") {
            // The seed builds a plain StaticLayer here; Transformers 5.18 keeps the linear-attention states too.
            layers.push_back(std::make_unique<LinearAttentionAndStaticFullAttentionLayer>(maxCacheLen));
        } else if (type == "hybrid_sliding") {
            if (!config.slidingWindow) {
                throw CacheError(ErrorKind::Type, "layer type `hybrid_sliding` needs `sliding_window` in the config, "
                                                  "and it is not set");
            }
            layers.push_back(
                std::make_unique<LinearAttentionAndStaticSlidingWindowAttentionLayer>(maxCacheLen, *config.slidingWindow));
        } else if (type == "indexed_attention") {
            layers.push_back(std::make_unique<StaticIndexedLayer>(maxCacheLen));
        } else {
            // Everything else is a plain static layer in the reference.
            layers.push_back(std::make_unique<StaticLayer>(maxCacheLen));
        }
    }
    return layers;
}

StaticCache::StaticCache(const config::ModelConfig& config, int64_t maxCacheLen, Offloading offloading)
    : Cache(layersFor(config, maxCacheLen), offloading) {}

} // namespace kvscope::cache
