// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/press/PressInputs.h"
#include "kvscope/press/PressReads.h"

#include <ATen/core/Tensor.h>
#include <string>

namespace kvscope::press {

/// One SimLayerKV decision on one layer (one for the whole batch).
struct LazyLayerDecision {
    /// The attention the last `n_last` queries give the initial and recent tokens, when measured (not with
    /// threshold 1 or too short a sequence).
    double lazyScore = 0.0;
    bool measured = false;
    bool lazy = false;
    /// Kept slots [B, Hkv, n] in position order: the initial and recent tokens if lazy, else all.
    at::Tensor keptIndices;
    /// kvpress's bookkeeping (T - n_initial - n_recent + 1) / T for a lazy layer, 0 otherwise.
    double reportedRatio = 0.0;
};

/// SimLayerKV: a layer whose last queries attend mostly to the initial and recent tokens is "lazy" and
/// keeps only those; other layers keep everything. `lazyThreshold` 1 disables it.
class SimLayerKvPress {
public:
    SimLayerKvPress(double lazyThreshold = 1.0, int64_t lastCount = 1, int64_t recentCount = 1024,
                    int64_t initialCount = 4);
    std::string name() const { return "simlayerkv"; }
    std::string referenceName() const { return "SimLayerKVPress"; }
    PressReads reads() const { return {false, true, false}; }
    LazyLayerDecision decide(const PressInputs& inputs) const;
    /// The attention (mean over batch, heads and the last n_last queries) on the first n_initial and the
    /// last n_recent of the columns SnapKV's window attention keeps.
    double lazyScore(const PressInputs& inputs) const;
    /// Whether a layer of `length` tokens is measured at all (kvpress leaves shorter ones and threshold 1).
    bool measures(int64_t length) const;

private:
    double m_lazyThreshold;
    int64_t m_lastCount;
    int64_t m_recentCount;
    int64_t m_initialCount;
};

} // namespace kvscope::press
