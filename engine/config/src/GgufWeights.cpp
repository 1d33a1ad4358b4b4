// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/config/GgufWeights.h"

#include "kvscope/config/NameTable.h"

namespace kvscope::config {
namespace {

constexpr NameTable<GgufWeights, 2> kGgufWeightsNames{{{
    {GgufWeights::Packed, "packed"},
    {GgufWeights::Float32, "float32"},
}}};
static_assert(kGgufWeightsNames.entries().size() == static_cast<size_t>(GgufWeights::Last) + 1, "one name per way");

} // namespace

std::string_view toString(GgufWeights weights) { return kGgufWeightsNames.name(weights); }
std::optional<GgufWeights> ggufWeightsFromString(std::string_view name) { return kGgufWeightsNames.parse(name); }
std::string allowedGgufWeights() { return kGgufWeightsNames.allowed(); }

} // namespace kvscope::config
