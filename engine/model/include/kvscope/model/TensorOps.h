// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/model/Architecture.h"

#include <ATen/core/Tensor.h>
#include <functional>
#include <optional>
#include <utility>

// The building blocks of the built-in models, written as Transformers' modelling code computes
// them (same operation order), so that checkpoints give the logits the reference would.
namespace kvscope::model::ops {

/// `input @ weight^T + bias`. A weight stored in another dtype (a bf16/f16 checkpoint) computes in the
/// input's dtype, widened a block of rows at a time: the model keeps 2 bytes per weight in memory.
at::Tensor linear(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias = at::Tensor());
/// Rows of an embedding table for `ids`, as float32 whatever dtype the table is stored in.
at::Tensor embed(const at::Tensor& weight, const at::Tensor& ids);
/// Llama's RMSNorm (`weight * x / rms(x)`), or Gemma's (`x / rms(x) * (1 + weight)`).
at::Tensor rmsNorm(const at::Tensor& input, const at::Tensor& weight, double eps, bool addOne);
at::Tensor layerNorm(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias,
                     double eps = 1e-5);
at::Tensor activate(const at::Tensor& input, Activation activation);
/// `activate(gate) * up`, the gated MLP's product (one pass over float rows on the CPU).
at::Tensor gatedActivation(const at::Tensor& gate, const at::Tensor& up, Activation activation);
/// The rotary inverse frequencies [rotaryDim / 2] for base `theta`, rescaled as `scaling` says
/// (modeling_rope_utils' default, linear and llama3 computations; Architecture refuses other types).
at::Tensor inverseFrequencies(int64_t rotaryDim, double theta,
                              const std::optional<config::RopeScaling>& scaling, const at::Device& device);
/// cos and sin [batch, 1, tokens, rotaryDim] of the rotary embedding at `positions` [batch, tokens].
std::pair<at::Tensor, at::Tensor> rotary(const at::Tensor& positions, const at::Tensor& inverseFrequencies);
/// `x * cos + rotate_half(x) * sin` for x [batch, heads, tokens, headDim]; when cos is narrower than
/// the head (partial rotary), only the leading channels rotate and the rest pass through.
at::Tensor applyRotary(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);
/// Receives a chunk of attention weights [B, Hq, rows, KV]: query rows firstQuery .. firstQuery + rows - 1.
using AttentionWeightsSink = std::function<void(const at::Tensor& weights, int64_t firstQuery)>;
/// Query rows attend() computes at once for [batch, heads, ..., kvLength] scores (a 32 MB budget, at least
/// 1).
int64_t attentionQueryChunk(int64_t batch, int64_t heads, int64_t kvLength);
/// Eager attention: q [B, Hq, T, D] against k/v [B, Hkv, KV, D] (query head h reads KV head h / (Hq / Hkv)), masked
/// with the dtype's lowest value where `mask` [B|1, 1, T, KV] is false, and where `hiddenSlots`
/// [B, Hkv, L <= KV] is true: a masking press's slots, hidden from that KV head's query heads. Returns
/// [B, T, Hq * D]; with `probabilities`, also the attention weights [B, Hq, T, KV] (for presses that read
/// them). Query rows are computed `queryChunk` at a time (0: attentionQueryChunk's budget), so a long
/// prefill never holds the scores of all rows; `weightsSink` receives each chunk's weights as it goes.
at::Tensor attend(const at::Tensor& query, const at::Tensor& keys, const at::Tensor& values,
                  const at::Tensor& mask, double scale, double softcap = 0.0,
                  at::Tensor* probabilities = nullptr, const at::Tensor& hiddenSlots = at::Tensor(),
                  const AttentionWeightsSink& weightsSink = {}, int64_t queryChunk = 0);
/// [B, T, heads * dim] -> [B, heads, T, dim].
at::Tensor splitHeads(const at::Tensor& x, int64_t heads);

} // namespace kvscope::model::ops
