// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvscope::config {

/// The quantizer of a quantized cache: min-max affine (quanto's layout; "quanto" is an alias) or HQQ.
enum class QuantizerBackend { MinMax, Hqq, Last = Hqq };

std::string_view toString(QuantizerBackend backend);
/// Accepts "min-max", its alias "quanto" and "hqq"; nullopt for anything else.
std::optional<QuantizerBackend> quantizerBackendFromString(std::string_view name);
std::vector<std::string> quantizerBackendNames();
std::string allowedQuantizerBackends();
/// The bit widths the backend supports (min-max: 2, 4, 8; hqq: 1, 2, 3, 4, 8).
std::vector<int> allowedBitWidths(QuantizerBackend backend);

} // namespace kvscope::config
