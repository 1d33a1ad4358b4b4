// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/cache/Cache.h"

#include "kvscope/config/ModelConfig.h"

#include <string>

namespace kvscope::gguf {
class BlockType;
}

namespace kvscope::cache {

/// llama.cpp's KV cache (`--cache llamacpp`): one LlamaCppLayer per model layer, K and V in the ggml types
/// `-ctk`/`-ctv` name, rotated when quantised unless `rotation` is off (LLAMA_ATTN_ROT_DISABLE=1).
class LlamaCppCache : public Cache {
public:
    LlamaCppCache(const config::ModelConfig& config, const std::string& keyType, const std::string& valueType,
                  bool rotation);

    std::string typeName() const override { return "LlamaCppCache"; }

    /// The ggml type `name` (config::llamaCppCacheTypes()) for `what` ("K" or "V"); CacheError naming the allowed
    /// types for another name.
    static const gguf::BlockType& cacheType(const std::string& name, const char* what);
};

} // namespace kvscope::cache
