// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace kvscope::press {

/// One compression decision of a scorer press on one layer.
struct PressSelection {
    /// Tokens kept per KV head.
    int64_t keptCount = 0;
    /// The scorer's output [B, Hkv, T]; undefined when nothing was compressed (ratio 0).
    at::Tensor scores;
    /// Kept slots [B, Hkv, keptCount] in canonical order (score descending, index ascending).
    at::Tensor keptIndices;
};

} // namespace kvscope::press
