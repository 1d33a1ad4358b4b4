// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/cache/Cache.h"
#include "kvscope/cache/Quantizer.h"

#include "kvscope/config/ModelConfig.h"
#include "kvscope/config/QuantizerBackend.h"

#include <memory>
#include <string>

namespace kvscope::cache {

/// Settings of a quantized cache, with the reference's defaults.
struct QuantizationSettings {
    config::QuantizerBackend backend = config::QuantizerBackend::MinMax;
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

    /// The settings' quantizer; refuses bit widths and group sizes the backend cannot take.
    static std::shared_ptr<const Quantizer> makeQuantizer(const QuantizationSettings& settings);
};

} // namespace kvscope::cache
