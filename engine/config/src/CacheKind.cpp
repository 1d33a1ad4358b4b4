// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/config/CacheKind.h"

#include "kvscope/config/NameTable.h"

namespace kvscope::config {
namespace {

constexpr NameTable<CacheKind, 5> kCacheKindNames{{{
    {CacheKind::Dynamic, "dynamic"},
    {CacheKind::Static, "static"},
    {CacheKind::Quantized, "quantized"},
    {CacheKind::Offloaded, "offloaded"},
    {CacheKind::LlamaCpp, "llamacpp"},
}}};
static_assert(kCacheKindNames.entries().size() == static_cast<size_t>(CacheKind::Last) + 1, "one name per kind");

} // namespace

std::string_view toString(CacheKind kind) { return kCacheKindNames.name(kind); }
std::optional<CacheKind> cacheKindFromString(std::string_view name) { return kCacheKindNames.parse(name); }
std::vector<std::string> cacheKindNames() { return kCacheKindNames.names(); }
std::string allowedCacheKinds() { return kCacheKindNames.allowed(); }

const std::vector<std::string>& llamaCppCacheTypes() {
    static const std::vector<std::string> types = {"f32",  "f16",  "bf16", "q8_0",  "q4_0",
                                                   "q4_1", "iq4_nl", "q5_0", "q5_1"};
    return types;
}

std::string allowedLlamaCppCacheTypes() {
    std::string text;
    for (const std::string& type : llamaCppCacheTypes()) {
        text += (text.empty() ? "" : ", ") + type;
    }
    return text;
}

} // namespace kvscope::config
