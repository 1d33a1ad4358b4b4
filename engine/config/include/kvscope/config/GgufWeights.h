// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace kvscope::config {

/// How a GGUF model holds its quantised matrices: `packed` as the file's blocks, multiplied block by block
/// (about the file's size in memory), or `float32`, widened at load (products in LibTorch's order, as
/// Transformers computes them; several times the memory).
enum class GgufWeights { Packed, Float32, Last = Float32 };

std::string_view toString(GgufWeights weights);
std::optional<GgufWeights> ggufWeightsFromString(std::string_view name);
std::string allowedGgufWeights();

} // namespace kvscope::config
