// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvscope::config {

/// The cache a run uses: the reference's DynamicCache, StaticCache, QuantizedCache, or a DynamicCache
/// that offloads its layers.
enum class CacheKind { Dynamic, Static, Quantized, Offloaded, Last = Offloaded };

std::string_view toString(CacheKind kind);
/// Accepts the names toString gives; nullopt for anything else.
std::optional<CacheKind> cacheKindFromString(std::string_view name);
/// The names, in order, e.g. for a menu.
std::vector<std::string> cacheKindNames();
/// "dynamic, static, quantized, offloaded" for messages.
std::string allowedCacheKinds();

} // namespace kvscope::config
