// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace kvscope::model {

class ModelCache;

/// What one attention layer saw in one forward pass (kvpress's forward_hook arguments), after attention.
struct AttentionPass {
    int64_t layer = 0;
    /// Tokens of this pass (1 while decoding).
    int64_t queryLength = 0;
    /// The attention input [B, t, hidden] (after the input norm).
    at::Tensor hiddenStates;
    /// q_proj's weight [H * D, hidden] and bias (undefined without one).
    at::Tensor queryWeight;
    at::Tensor queryBias;
    /// q_norm's weight [D] where the family norms queries (Qwen3, Gemma 3), else undefined.
    at::Tensor queryNormWeight;
    /// k_proj's weight [Hkv * D, hidden], bias and k_norm's weight (undefined where absent): presses that
    /// read pre-RoPE keys (LeverageScore, Compactor).
    at::Tensor keyWeight;
    at::Tensor keyBias;
    at::Tensor keyNormWeight;
    /// o_proj's weight [hidden, H * D] (CriticalKV's value norms).
    at::Tensor outputWeight;
    /// Positions [B | 1, t] of this pass's tokens.
    at::Tensor positions;
    /// The keys and values the layer attended with [B, Hkv, KV, D]: its whole cache, this pass included.
    at::Tensor keys;
    at::Tensor values;
    /// Rotary rows [B, t, D] of this pass's positions.
    at::Tensor cos;
    at::Tensor sin;
    /// The layer's rotary inverse frequencies [rotaryDim / 2], RoPE scaling applied: presses rotate future
    /// positions with them.
    at::Tensor inverseFrequencies;
    /// The attention weights summed over this pass's queries [B, H, KV] (what each key received), only
    /// when the observer asked for them: the model sums them a chunk of query rows at a time, so a long
    /// prefill never holds the weights [B, H, t, KV] of all rows.
    at::Tensor attentionReceived;
    /// The cache the layer updated (null without a cache).
    ModelCache* cache = nullptr;
};

} // namespace kvscope::model
