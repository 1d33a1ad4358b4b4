// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/cache/Cache.h"

#include "kvscope/config/ModelConfig.h"

namespace kvscope::cache {

/// A preallocated cache of `maxCacheLen` tokens per layer (the reference's `StaticCache`); sliding and
/// chunked layers hold their window only.
class StaticCache : public Cache {
public:
    StaticCache(const config::ModelConfig& config, int64_t maxCacheLen, Offloading offloading = Offloading::Off);

    std::string typeName() const override { return "StaticCache"; }

    static std::vector<std::unique_ptr<CacheLayer>> layersFor(const config::ModelConfig& config, int64_t maxCacheLen);
};

} // namespace kvscope::cache
