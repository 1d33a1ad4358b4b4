// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/cache/Cache.h"

#include "kvscope/config/ModelConfig.h"

#include <optional>

namespace kvscope::cache {

/// The default growing cache (the reference's `DynamicCache`): with a model config, one layer per
/// layer type (sliding and chunked layers keep a window, linear-attention and hybrid layers their
/// states); without one, dynamic layers created as updates reach them.
class DynamicCache : public Cache {
public:
    /// The reference's default for a DynamicCache offloads every layer (`offload_only_non_sliding=False`).
    explicit DynamicCache(const std::optional<config::ModelConfig>& config = std::nullopt,
                          Offloading offloading = Offloading::Off);

    std::string typeName() const override { return "DynamicCache"; }

    /// The layers the reference builds for this config (empty when it replicates lazily).
    static std::vector<std::unique_ptr<CacheLayer>> layersFor(const config::ModelConfig& config);
};

} // namespace kvscope::cache
