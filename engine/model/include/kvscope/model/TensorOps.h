// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/model/Architecture.h"

#include <ATen/core/Tensor.h>

#include <utility>

// The building blocks of the built-in models, written as Transformers' modelling code computes
// them (same operation order), so that checkpoints give the logits the reference would.
namespace kvscope::model::ops {

at::Tensor linear(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias = at::Tensor());
/// Llama's RMSNorm (`weight * x / rms(x)`), or Gemma's (`x / rms(x) * (1 + weight)`).
at::Tensor rmsNorm(const at::Tensor& input, const at::Tensor& weight, double eps, bool addOne);
at::Tensor layerNorm(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias, double eps = 1e-5);
at::Tensor activate(const at::Tensor& input, Activation activation);
/// cos and sin [batch, 1, tokens, headDim] of the rotary embedding at `positions` [batch, tokens].
std::pair<at::Tensor, at::Tensor> rotary(const at::Tensor& positions, int64_t headDim, double theta);
/// `x * cos + rotate_half(x) * sin` for x [batch, heads, tokens, headDim].
at::Tensor applyRotary(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);
/// Eager attention: q [B, Hq, T, D] against k/v [B, Hkv, KV, D] (grouped heads repeated), masked
/// with the dtype's lowest value where `mask` [B|1, 1, T, KV] is false. Returns [B, T, Hq * D]; with
/// `probabilities`, also the attention weights [B, Hq, T, KV] (for presses that read them).
at::Tensor attend(const at::Tensor& query, const at::Tensor& keys, const at::Tensor& values, const at::Tensor& mask,
                  double scale, double softcap = 0.0, at::Tensor* probabilities = nullptr);
/// [B, T, heads * dim] -> [B, heads, T, dim].
at::Tensor splitHeads(const at::Tensor& x, int64_t heads);

} // namespace kvscope::model::ops
