// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/press/PressAction.h"
#include "kvscope/press/PressInputs.h"

#include <cstdint>

namespace kvscope::press {

/// One forward pass of one layer, as a generation hands it to a press.
struct PressPass {
    /// The layer's pass: 0 is the prefill, then one per decoding step.
    int64_t index = 0;
    /// Tokens of this pass (1 while decoding).
    int64_t queryLength = 0;
    /// The run's compression ratio (`--ratio`).
    double ratio = 0.0;
    /// Positions [B, Hkv, L] of the layer's cached slots, this pass's appended.
    at::Tensor positions;
};

/// A press as a generation applies it (kvpress's forward hook): it sees every pass of every layer right
/// after the layer's update and decides what the cache keeps. Built by the press's registration
/// (engine/presses/); runtime::CachePressHook applies the decisions to the cache and logs them.
class CachePress {
public:
    virtual ~CachePress() = default;
    /// Whether the model must compute this pass's attention weights for the press (only then is it asked).
    virtual bool wantsAttentionWeights(int64_t layer, int64_t passIndex) const;
    /// Decides on one pass; `inputs` hold the layer's whole cache, this pass's tokens appended.
    virtual PressAction onPass(const PressInputs& inputs, const PressPass& pass) = 0;
};

} // namespace kvscope::press
