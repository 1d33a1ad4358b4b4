// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/trace/LayerKind.h"

#include <array>

namespace kvscope::trace {

namespace {

struct LayerKindName {
    LayerKind kind;
    std::string_view snakeCase;
    std::string_view enumerator;
};

constexpr std::array<LayerKindName, 7> kNames{{
    {LayerKind::Dynamic, "dynamic", "Dynamic"},
    {LayerKind::DynamicSlidingWindow, "dynamic_sliding_window", "DynamicSlidingWindow"},
    {LayerKind::Static, "static", "Static"},
    {LayerKind::StaticSlidingWindow, "static_sliding_window", "StaticSlidingWindow"},
    {LayerKind::Quantized, "quantized", "Quantized"},
    {LayerKind::LinearAttention, "linear_attention", "LinearAttention"},
    {LayerKind::LinearAttentionAndFullAttention, "linear_attention_and_full_attention",
     "LinearAttentionAndFullAttention"},
}};

} // namespace

std::string_view toString(LayerKind kind) {
    for (const LayerKindName& entry : kNames) {
        if (entry.kind == kind)
            return entry.snakeCase;
    }
    return "unknown";
}

std::optional<LayerKind> layerKindFromString(std::string_view name) {
    for (const LayerKindName& entry : kNames) {
        if (entry.snakeCase == name || entry.enumerator == name)
            return entry.kind;
    }
    return std::nullopt;
}

} // namespace kvscope::trace
