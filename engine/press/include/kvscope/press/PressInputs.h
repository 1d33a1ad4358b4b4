// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace kvscope::press {

/// What a press may read about one attention layer: its cache and, when the press asks for them
/// (Press::reads), the layer's input rows, query projection, rotary rows and attention weights.
struct PressInputs {
    /// The layer cache [B, Hkv, T, D], keys already rotated.
    at::Tensor keys;
    at::Tensor values;
    /// The attention input [B, t, hidden]: the prefill rows, or the buffered decoding rows.
    at::Tensor hiddenStates;
    /// q_proj's weight [H * D, hidden] and bias (undefined without one; kvpress's models have none).
    at::Tensor queryWeight;
    at::Tensor queryBias;
    /// Rotary rows [1 | B, n, D] of the hidden rows' positions; a single row is broadcast to every query.
    at::Tensor cos;
    at::Tensor sin;
    /// Eager attention weights [B, H, T, T].
    at::Tensor attentions;
    int64_t numHeads = 0;
    int64_t numKeyValueHeads = 0;
    int64_t headDim = 0;
    int64_t layerIndex = 0;
    int64_t numLayers = 1;
    double ropeTheta = 10000.0;
};

} // namespace kvscope::press
