// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/LlamaCppCache.h"

#include "kvscope/cache/CacheError.h"
#include "kvscope/cache/LlamaCppLayer.h"
#include "kvscope/config/CacheKind.h"
#include "kvscope/gguf/BlockType.h"

#include <algorithm>

namespace kvscope::cache {

const gguf::BlockType& LlamaCppCache::cacheType(const std::string& name, const char* what) {
    const auto& types = config::llamaCppCacheTypes();
    if (std::find(types.begin(), types.end(), name) == types.end()) {
        throw CacheError(ErrorKind::Value, std::string("the llama.cpp cache's ") + what + " type `" + name +
                                               "` is not one llama.cpp accepts (allowed: " +
                                               config::allowedLlamaCppCacheTypes() + ")");
    }
    // Every type llama.cpp's cache takes has ggml's reference quantiser in gguf::BlockType.
    return *gguf::BlockType::find(name);
}

namespace {

std::vector<std::unique_ptr<CacheLayer>> buildLayers(const config::ModelConfig& config, const std::string& keyType,
                                                     const std::string& valueType, bool rotation) {
    const gguf::BlockType& key = LlamaCppCache::cacheType(keyType, "K");
    const gguf::BlockType& value = LlamaCppCache::cacheType(valueType, "V");
    std::vector<std::unique_ptr<CacheLayer>> layers;
    for (int64_t index = 0; index < config.numHiddenLayers; ++index) {
        layers.push_back(std::make_unique<LlamaCppLayer>(key, value, rotation));
    }
    return layers;
}

} // namespace

LlamaCppCache::LlamaCppCache(const config::ModelConfig& config, const std::string& keyType,
                             const std::string& valueType, bool rotation)
    : Cache(buildLayers(config, keyType, valueType, rotation)) {}

} // namespace kvscope::cache
