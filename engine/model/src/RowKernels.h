// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/model/Architecture.h"

#include <cstdint>

// The element-wise loops of a layer over one row at a time (rmsNorm, the rotary embedding, the MLP's gated
// activation), each with an AVX2 body where the kernel level allows it (BlockType::kernelLevel) and a portable
// one: TensorOps runs them over a prompt's rows on the kernel threads, where LibTorch's operations cost a pass
// over memory each (Gemma 3's 512-token norm: seven passes, 1.2 ms against 0.05 ms).
namespace kvscope::model::ops::rows {

/// Whether the AVX2 bodies run (the kernel level is above Portable).
bool vectorised();

/// out = x * inverse * scale (Llama), or x * inverse * (scale + 1) (Gemma), each product rounded as the
/// reference rounds it; the sum of squares the inverse comes from, in double.
double sumOfSquares(const float* x, int64_t width);
void scaleRow(const float* x, const float* scale, float inverse, bool addOne, int64_t width, float* out);

/// out = x * cos + rotate_half(x) * sin for one row of `dim` values, bit for bit the tensor formula.
void rotateRow(const float* x, const float* cos, const float* sin, int64_t dim, float* out);

/// out = act(gate) * up for `width` values, act one of Silu or GeluTanh (gatedActivates() says which).
void gateRow(const float* gate, const float* up, Activation activation, int64_t width, float* out);
/// The activations gateRow computes.
bool gatedActivates(Activation activation);

} // namespace kvscope::model::ops::rows
