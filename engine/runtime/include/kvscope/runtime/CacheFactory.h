#pragma once

#include "kvscope/cache/QuantizedCache.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <string>

namespace kvscope::model {
class LanguageModel;
class ModelCache;
} // namespace kvscope::model

namespace kvscope::runtime {

/// The cache a run uses, as `kvscope-cli run` takes it.
struct CacheOptions {
    std::string kind = "dynamic";    ///< dynamic, static, quantized or offloaded
    std::string backend = "min-max"; ///< quantized: min-max (alias quanto) or hqq
    int nbits = 4;
    int64_t groupSize = 0;           ///< quantized: 0 = the model's head dim (always divides the states)
    int64_t residualLength = 128;    ///< quantized: full-precision tokens before a flush
    int64_t maxCacheLen = 0;         ///< static: 0 = prompt + new tokens
};

/// Builds the cache for a model and a run: DynamicCache, StaticCache, QuantizedCache or an offloading
/// DynamicCache, wrapped with a cross-attention cache for encoder-decoder models.
class CacheFactory {
public:
    /// `maxLength`: prompt plus new tokens, the static cache's length unless options say otherwise.
    /// Refuses unknown kinds and combinations the reference cannot run, naming the allowed ones.
    static std::unique_ptr<model::ModelCache> create(const model::LanguageModel& model, const CacheOptions& options,
                                                     int64_t maxLength);
    /// The quantized cache settings: min-max groups along axis 0, HQQ along axis 1 (contiguous groups
    /// inside one token), group size defaulting to the head dim.
    static cache::QuantizationSettings quantizationSettings(const CacheOptions& options, int64_t headDim);
    /// The options as a session file records them: the kind, the resolved quantization settings of a
    /// quantized cache, the length of a static one when given.
    static nlohmann::json describe(const CacheOptions& options, int64_t headDim);
    /// The largest |cached - recomputed| logit difference a run with these options is expected to stay
    /// under (full precision: 1e-4; quantized: a bound per bit width, from measurements).
    static double logitTolerance(const CacheOptions& options);
    static const char* allowedKinds() { return "dynamic, static, quantized, offloaded"; }
    static bool isKnownKind(const std::string& kind);
};

} // namespace kvscope::runtime
