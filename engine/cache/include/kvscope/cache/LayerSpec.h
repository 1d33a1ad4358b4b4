// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/cache/MinMaxQuantizer.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace kvscope::cache {

class CacheLayer;

/// The layer classes a benchmark or a conformance fixture names ("dynamic_sliding"...).
enum class LayerType {
    Dynamic,
    DynamicSliding,
    Static,
    StaticSliding,
    QuantizedMinMax,
    QuantizedHqq,
    DynamicIndexed,
    StaticIndexed,
    Last = StaticIndexed
};

std::string_view toString(LayerType type);
/// Accepts the names toString gives (the oracle's fixture names); nullopt for anything else.
std::optional<LayerType> layerTypeFromString(std::string_view name);
std::string allowedLayerTypes();

/// One cache layer described by value: its type and the options that type takes (others are ignored).
struct LayerSpec {
    LayerType type = LayerType::Dynamic;
    int64_t slidingWindow = 0;     ///< sliding types
    int64_t maxCacheLen = 0;       ///< static types
    int nbits = 4;                 ///< quantized types
    int64_t groupSize = 64;        ///< quantized types
    int64_t axisKey = 0;           ///< quantized types
    int64_t axisValue = 0;         ///< quantized types
    int64_t residualLength = 128;  ///< quantized types
    MinMaxQuantizer::Kernels kernels = MinMaxQuantizer::Kernels::Fused; ///< min-max only
};

/// The one factory of single layers from a spec (benchmarks, conformance fixtures); refuses options the
/// layer refuses, as its constructor does.
std::unique_ptr<CacheLayer> makeLayer(const LayerSpec& spec);

} // namespace kvscope::cache
