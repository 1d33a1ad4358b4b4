// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/LayerSpec.h"

#include "kvscope/cache/DynamicIndexedLayer.h"
#include "kvscope/cache/DynamicLayer.h"
#include "kvscope/cache/DynamicSlidingWindowLayer.h"
#include "kvscope/cache/HqqQuantizer.h"
#include "kvscope/cache/QuantizedLayer.h"
#include "kvscope/cache/StaticIndexedLayer.h"
#include "kvscope/cache/StaticLayer.h"
#include "kvscope/cache/StaticSlidingWindowLayer.h"
#include "kvscope/config/NameTable.h"

namespace kvscope::cache {
namespace {

constexpr config::NameTable<LayerType, 8> kNames{{{
    {LayerType::Dynamic, "dynamic"},
    {LayerType::DynamicSliding, "dynamic_sliding"},
    {LayerType::Static, "static"},
    {LayerType::StaticSliding, "static_sliding"},
    {LayerType::QuantizedMinMax, "quantized"},
    {LayerType::QuantizedHqq, "quantized_hqq"},
    {LayerType::DynamicIndexed, "dynamic_indexed"},
    {LayerType::StaticIndexed, "static_indexed"},
}}};
static_assert(kNames.entries().size() == static_cast<size_t>(LayerType::Last) + 1, "one name per type");

} // namespace

std::string_view toString(LayerType type) { return kNames.name(type); }
std::optional<LayerType> layerTypeFromString(std::string_view name) { return kNames.parse(name); }
std::string allowedLayerTypes() { return kNames.allowed(); }

std::unique_ptr<CacheLayer> makeLayer(const LayerSpec& spec) {
    switch (spec.type) {
    case LayerType::Dynamic:
        return std::make_unique<DynamicLayer>();
    case LayerType::DynamicSliding:
        return std::make_unique<DynamicSlidingWindowLayer>(spec.slidingWindow);
    case LayerType::Static:
        return std::make_unique<StaticLayer>(spec.maxCacheLen);
    case LayerType::StaticSliding:
        return std::make_unique<StaticSlidingWindowLayer>(spec.maxCacheLen, spec.slidingWindow);
    case LayerType::QuantizedMinMax:
        return std::make_unique<QuantizedLayer>(
            std::make_shared<MinMaxQuantizer>(spec.nbits, spec.groupSize, spec.kernels), spec.axisKey, spec.axisValue,
            spec.residualLength);
    case LayerType::QuantizedHqq:
        return std::make_unique<QuantizedLayer>(std::make_shared<HqqQuantizer>(spec.nbits, spec.groupSize),
                                                spec.axisKey, spec.axisValue, spec.residualLength);
    case LayerType::DynamicIndexed:
        return std::make_unique<DynamicIndexedLayer>();
    case LayerType::StaticIndexed:
        return std::make_unique<StaticIndexedLayer>(spec.maxCacheLen);
    }
    return nullptr;
}

} // namespace kvscope::cache
