// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/model/Architecture.h"

#include <ATen/core/Tensor.h>
#include <optional>
#include <utility>

// The building blocks of the built-in models, written as Transformers' modelling code computes
// them (same operation order), so that checkpoints give the logits the reference would.
namespace kvscope::model::ops {

at::Tensor linear(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias = at::Tensor());
/// Llama's RMSNorm (`weight * x / rms(x)`), or Gemma's (`x / rms(x) * (1 + weight)`).
at::Tensor rmsNorm(const at::Tensor& input, const at::Tensor& weight, double eps, bool addOne);
at::Tensor layerNorm(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias, double eps = 1e-5);
at::Tensor activate(const at::Tensor& input, Activation activation);
/// The rotary inverse frequencies [rotaryDim / 2] for base `theta`, rescaled as `scaling` says
/// (modeling_rope_utils' default, linear and llama3 computations; Architecture refuses other types).
at::Tensor inverseFrequencies(int64_t rotaryDim, double theta,
                              const std::optional<config::RopeScaling>& scaling, const at::Device& device);
/// cos and sin [batch, 1, tokens, rotaryDim] of the rotary embedding at `positions` [batch, tokens].
std::pair<at::Tensor, at::Tensor> rotary(const at::Tensor& positions, const at::Tensor& inverseFrequencies);
/// `x * cos + rotate_half(x) * sin` for x [batch, heads, tokens, headDim]; when cos is narrower than
/// the head (partial rotary), only the leading channels rotate and the rest pass through.
at::Tensor applyRotary(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);
/// Eager attention: q [B, Hq, T, D] against k/v [B, Hkv, KV, D] (grouped heads repeated), masked
/// with the dtype's lowest value where `mask` [B|1, 1, T, KV] is false, and where `hiddenSlots`
/// [B, Hkv, L <= KV] is true: a masking press's slots, hidden from that KV head's query heads. Returns
/// [B, T, Hq * D]; with `probabilities`, also the attention weights [B, Hq, T, KV] (for presses that read
/// them).
at::Tensor attend(const at::Tensor& query, const at::Tensor& keys, const at::Tensor& values,
                  const at::Tensor& mask, double scale, double softcap = 0.0,
                  at::Tensor* probabilities = nullptr, const at::Tensor& hiddenSlots = at::Tensor());
/// [B, T, heads * dim] -> [B, heads, T, dim].
at::Tensor splitHeads(const at::Tensor& x, int64_t heads);

} // namespace kvscope::model::ops
