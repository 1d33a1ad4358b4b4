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
    virtual void afterAttention(const AttentionPass& pass) = 0;
};

} // namespace kvscope::model
