// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/model/AttentionPass.h"

namespace kvscope::model {

/// Sees every attention layer after its forward pass, as a kvpress forward hook does; cache presses use it
/// to score and compress the layer's cache. Attention weights are computed only for a layer it asks.
class AttentionObserver {
public:
    virtual ~AttentionObserver() = default;
    virtual bool wantsAttentionWeights(int64_t layer, int64_t queryLength) const = 0;
    /// The attention weights [B, H, rows, KV] of query rows firstQuery .. firstQuery + rows - 1 of a layer it
    /// asked for, chunk by chunk in row order, before afterAttention: a long prefill attends a chunk of rows
    /// at a time and never holds the weights of all rows. AttentionPass::attentionReceived has their sum.
    virtual void attentionWeights(int64_t layer, const at::Tensor& weights, int64_t firstQuery) {
        (void)layer;
        (void)weights;
        (void)firstQuery;
    }
    virtual void afterAttention(const AttentionPass& pass) = 0;
};

} // namespace kvscope::model
