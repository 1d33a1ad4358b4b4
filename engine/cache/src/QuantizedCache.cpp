// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/QuantizedCache.h"

#include "kvscope/cache/CacheError.h"
#include "kvscope/cache/HqqQuantizer.h"
#include "kvscope/cache/MinMaxQuantizer.h"
#include "kvscope/cache/QuantizedLayer.h"

namespace kvscope::cache {
namespace {

std::vector<std::unique_ptr<CacheLayer>> buildLayers(const config::ModelConfig& config,
                                                     const QuantizationSettings& settings) {
    auto quantizer = QuantizedCache::makeQuantizer(settings);
    std::vector<std::unique_ptr<CacheLayer>> layers;
    for (int64_t index = 0; index < config.numHiddenLayers; ++index) {
        layers.push_back(std::make_unique<QuantizedLayer>(quantizer, settings.axisKey, settings.axisValue,
                                                          settings.residualLength));
    }
    return layers;
}

} // namespace

std::shared_ptr<const Quantizer> QuantizedCache::makeQuantizer(const QuantizationSettings& settings) {
    switch (settings.backend) {
    case config::QuantizerBackend::MinMax:
        return std::make_shared<MinMaxQuantizer>(settings.nbits, settings.groupSize);
    case config::QuantizerBackend::Hqq:
        return std::make_shared<HqqQuantizer>(settings.nbits, settings.groupSize);
    }
    throw CacheError(ErrorKind::Value, "Unknown quantization backend (allowed: " +
                                           config::allowedQuantizerBackends() + ")");
}

QuantizedCache::QuantizedCache(const config::ModelConfig& config, const QuantizationSettings& settings)
    : Cache(buildLayers(config, settings)) {}

} // namespace kvscope::cache
