// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/config/QuantizerBackend.h"

#include "kvscope/config/NameTable.h"

namespace kvscope::config {
namespace {

constexpr NameTable<QuantizerBackend, 3> kQuantizerBackendNames{{{
    {QuantizerBackend::MinMax, "min-max"},
    {QuantizerBackend::MinMax, "quanto", true},
    {QuantizerBackend::Hqq, "hqq"},
}}};

} // namespace

std::string_view toString(QuantizerBackend backend) { return kQuantizerBackendNames.name(backend); }
std::optional<QuantizerBackend> quantizerBackendFromString(std::string_view name) { return kQuantizerBackendNames.parse(name); }
std::vector<std::string> quantizerBackendNames() { return kQuantizerBackendNames.names(); }
std::string allowedQuantizerBackends() { return kQuantizerBackendNames.allowed(); }

std::vector<int> allowedBitWidths(QuantizerBackend backend) {
    // quanto packs 2, 4 or 8 bits; HQQ's solver also takes 1 and 3 (the reference's backends).
    return backend == QuantizerBackend::Hqq ? std::vector<int>{1, 2, 3, 4, 8} : std::vector<int>{2, 4, 8};
}

} // namespace kvscope::config
