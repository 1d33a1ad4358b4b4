// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/press/PressInputs.h"

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace kvscope::press {

/// The width of a PressWorkload's layer: a Llama-style layer of a small model by default.
struct PressWorkloadShape {
    int64_t heads = 8;
    int64_t keyValueHeads = 2;
    int64_t headDim = 64;
};

/// A seeded synthetic attention layer of `tokens` tokens: what a press reads of it, and the layer's own
/// attention work (prefill, one decode step), so that a press's cost reads as a share of the work it
/// follows (`kvscope-cli bench press`, tests/bench/PressBenchmark).
class PressWorkload {
public:
    PressWorkload(int64_t tokens, PressWorkloadShape shape = {}, uint64_t seed = 0);

    int64_t tokens() const { return m_tokens; }
    const PressWorkloadShape& shape() const { return m_shape; }
    /// The prefill's inputs over every token (keys, values, hidden rows, q_proj, k_proj, o_proj, rotary
    /// rows), without attention weights.
    const PressInputs& inputs() const { return m_inputs; }
    /// The prefill's inputs with its causal attention weights [1, H, T, T], for presses that read them.
    PressInputs inputsWithAttentions() const;
    /// The decoding pass that appends token `length - 1`: the cache's first `length` slots, that token's
    /// hidden row and rotary row.
    PressInputs decodingPass(int64_t length) const;

    /// The RoPE'd queries [1, H, count, D] of tokens first .. first + count - 1.
    at::Tensor queries(int64_t first, int64_t count) const;

    /// The layer's prefill: q/k/v projections, RoPE and causal eager attention over every token.
    at::Tensor prefillAttention() const;
    /// The layer's decode step after `cached` tokens: one token's projections, RoPE, and its attention
    /// over the cache with the new slot appended.
    at::Tensor decodeStepAttention(int64_t cached) const;

private:
    at::Tensor projectedQueries(const at::Tensor& hidden, const at::Tensor& cos, const at::Tensor& sin) const;

    int64_t m_tokens;
    PressWorkloadShape m_shape;
    PressInputs m_inputs;
    at::Tensor m_keyWeight;
    at::Tensor m_valueWeight;
};

} // namespace kvscope::press
