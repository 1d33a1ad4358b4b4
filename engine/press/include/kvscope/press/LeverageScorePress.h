// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/press/Press.h"

namespace kvscope::press {

/// LeverageScore: the statistical leverage of each token's pre-RoPE key (centred, projected by a random
/// Gaussian sketch of `sketchDimension` columns) in the layer's key matrix, z-normalised. Prefill only.
/// kvpress draws the sketch from torch's global RNG; this press draws it from `seed` and the layer index,
/// or takes a recorded one (PressInputs::randomMatrix).
class LeverageScorePress : public Press {
public:
    explicit LeverageScorePress(int64_t sketchDimension = 48, uint64_t seed = 0);
    std::string name() const override { return "leverage"; }
    std::string referenceName() const override { return "LeverageScorePress"; }
    PressReads reads() const override { return {false, true, false}; }
    at::Tensor score(const PressInputs& inputs, int64_t keptCount) const override;
    /// z-normalised leverage scores [B, Hkv, rows] of the hidden rows [first, first + rows), in float64.
    static at::Tensor sliceScores(const PressInputs& inputs, int64_t first, int64_t rows,
                                  int64_t sketchDimension, uint64_t seed);
    /// The sketch [B, Hkv, D, k] (N(0, 1) / sqrt(k)): the recorded one, or drawn from `seed`.
    static at::Tensor sketch(const PressInputs& inputs, int64_t sketchDimension, uint64_t seed);

private:
    int64_t m_sketchDimension;
    uint64_t m_seed;
};

} // namespace kvscope::press
