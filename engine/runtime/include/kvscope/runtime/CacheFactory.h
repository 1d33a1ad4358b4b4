// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/cache/QuantizedCache.h"
#include "kvscope/config/RunSettings.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>

namespace kvscope::model {
class LanguageModel;
class ModelCache;
} // namespace kvscope::model

namespace kvscope::runtime {

/// Builds the cache for a model and a run: DynamicCache, StaticCache, QuantizedCache or an offloading
/// DynamicCache, wrapped with a cross-attention cache for encoder-decoder models.
class CacheFactory {
public:
    /// `maxLength`: prompt plus new tokens, the static cache's length unless the settings say otherwise.
    /// Refuses combinations the reference cannot run, naming the allowed ones.
    static std::unique_ptr<model::ModelCache> create(const model::LanguageModel& model,
                                                     const config::CacheSettings& settings, int64_t maxLength);
    /// The quantized cache settings: min-max groups along axis 0, HQQ along axis 1 (contiguous groups
    /// inside one token), group size defaulting to the head dim.
    static cache::QuantizationSettings quantizationSettings(const config::CacheSettings& settings, int64_t headDim);
    /// The settings as a session file records them: the kind, the resolved quantization settings of a
    /// quantized cache, the length of a static one when given.
    static nlohmann::json describe(const config::CacheSettings& settings, int64_t headDim);
    /// The largest |cached - recomputed| logit difference a run with these settings is expected to stay
    /// under (full precision: 1e-4; quantized: a bound per bit width, from measurements).
    static double logitTolerance(const config::CacheSettings& settings);
};

} // namespace kvscope::runtime
