// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/config/CacheKind.h"

#include "kvscope/config/NameTable.h"

namespace kvscope::config {
namespace {

constexpr NameTable<CacheKind, 4> kNames{{{
    {CacheKind::Dynamic, "dynamic"},
    {CacheKind::Static, "static"},
    {CacheKind::Quantized, "quantized"},
    {CacheKind::Offloaded, "offloaded"},
}}};
static_assert(kNames.entries().size() == static_cast<size_t>(CacheKind::Last) + 1, "one name per kind");

} // namespace

std::string_view toString(CacheKind kind) { return kNames.name(kind); }
std::optional<CacheKind> cacheKindFromString(std::string_view name) { return kNames.parse(name); }
std::vector<std::string> cacheKindNames() { return kNames.names(); }
std::string allowedCacheKinds() { return kNames.allowed(); }

} // namespace kvscope::config
