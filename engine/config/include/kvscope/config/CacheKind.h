// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvscope::config {

/// The cache a run uses: the reference's DynamicCache, StaticCache, QuantizedCache, a DynamicCache
/// that offloads its layers, or llama.cpp's KV cache (K and V in ggml types, `-ctk`/`-ctv`).
enum class CacheKind { Dynamic, Static, Quantized, Offloaded, LlamaCpp, Last = LlamaCpp };

std::string_view toString(CacheKind kind);
/// Accepts the names toString gives; nullopt for anything else.
std::optional<CacheKind> cacheKindFromString(std::string_view name);
/// The names, in order, e.g. for a menu.
std::vector<std::string> cacheKindNames();
/// "dynamic, static, quantized, offloaded, llamacpp" for messages.
std::string allowedCacheKinds();
/// The K and V types llama.cpp's cache accepts (`-ctk`/`-ctv`, common/arg.cpp), in ggml's spelling.
const std::vector<std::string>& llamaCppCacheTypes();
/// "f32, f16, ..." for messages.
std::string allowedLlamaCppCacheTypes();

} // namespace kvscope::config
