#pragma once

#include "kvscope/cache/Cache.h"
#include "kvscope/cache/Quantizer.h"

#include "kvscope/config/ModelConfig.h"

#include <memory>
#include <string>

namespace kvscope::cache {

/// Settings of a quantized cache, with the reference's defaults.
struct QuantizationSettings {
    std::string backend = "min-max"; ///< "min-max" (alias "quanto") or "hqq"
    int nbits = 4;
    int64_t axisKey = 0;
    int64_t axisValue = 0;
    int64_t groupSize = 64;
    int64_t residualLength = 128;
};

/// One quantized layer per model layer (the reference's `QuantizedCache`).
class QuantizedCache : public Cache {
public:
    QuantizedCache(const config::ModelConfig& config, const QuantizationSettings& settings);

    std::string typeName() const override { return "QuantizedCache"; }

    /// The quantizer for a backend name; refuses unknown names, listing the allowed ones.
    static std::shared_ptr<const Quantizer> makeQuantizer(const QuantizationSettings& settings);
};

} // namespace kvscope::cache
