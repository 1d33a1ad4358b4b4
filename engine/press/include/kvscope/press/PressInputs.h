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
    /// q_norm's weight [D] (Qwen3, Gemma 3; undefined without one), applied to the pre-RoPE queries as
    /// kvpress's get_prerope_query_states does, with the model's epsilon and Gemma's 1 + weight.
    at::Tensor queryNormWeight;
    double normEpsilon = 1e-6;
    bool normAddsOne = false;
    /// k_proj's weight [Hkv * D, hidden], bias and k_norm's weight (undefined where absent): the pre-RoPE
    /// keys that LeverageScore and Compactor read instead of the cached ones.
    at::Tensor keyWeight;
    at::Tensor keyBias;
    at::Tensor keyNormWeight;
    /// Rotary rows [1 | B, n, D] of the hidden rows' positions; a single row is broadcast to every query.
    at::Tensor cos;
    at::Tensor sin;
    /// Eager attention weights [B, H, T, T].
    at::Tensor attentions;
    /// The same weights summed over the queries [B, H, T], as a model that attends a chunk of query rows at
    /// a time hands them over; receivedAttention() reads whichever is defined.
    at::Tensor attentionReceived;
    /// What each key received, summed over the queries [B, H, T], from attentionReceived or attentions.
    at::Tensor receivedAttention() const {
        return attentionReceived.defined() ? attentionReceived : attentions.sum(2);
    }
    /// o_proj's weight [hidden, H * D] (CriticalKV's value norms; undefined unless the policy reads it).
    at::Tensor outputWeight;
    int64_t numHeads = 0;
    int64_t numKeyValueHeads = 0;
    int64_t headDim = 0;
    int64_t layerIndex = 0;
    int64_t numLayers = 1;
    /// The layer's rotary inverse frequencies [rotaryDim / 2], RoPE scaling applied (the model's
    /// rotary_emb); undefined: plain RoPE of ropeTheta over the whole head.
    at::Tensor inverseFrequencies;
    double ropeTheta = 10000.0;
    /// A recorded random matrix for presses that draw one from torch's global RNG (LeverageScore's and
    /// Compactor's sketch [B, Hkv, D, k], CUR's projection [D, 20]): the conformance fixtures hand over
    /// kvpress's draw. Undefined: the press draws its own from its seed.
    at::Tensor randomMatrix;
};

} // namespace kvscope::press
