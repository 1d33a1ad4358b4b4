// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/press/Press.h"

namespace kvscope::press {

/// LagKV: scores each partition of `lagSize` tokens against the next one (the spread of its keys and
/// values min-max scaled by the next partition's range); the sinks and the last partition are kept.
class LagKvPress : public Press {
public:
    LagKvPress(int64_t sinkCount = 4, int64_t lagSize = 128, bool crossScoring = false);
    std::string name() const override { return "lagkv"; }
    std::string referenceName() const override { return "LagKVPress"; }
    PressReads reads() const override { return {true, false, false}; }
    at::Tensor score(const PressInputs& inputs, int64_t keptCount) const override;
    /// The lag scores [B, Hkv, (P - 1) L] of the scored partitions (the mean of the key and value softmaxes),
    /// before any ranking; undefined when the sequence is shorter than n_sink + 2 lag_size.
    at::Tensor lagScores(const PressInputs& inputs) const;
    /// `lag_scores` when defined.
    std::map<std::string, at::Tensor> details(const PressInputs& inputs) const override;

private:
    /// softmax over each partition of the unbiased channel std of (x - min_ref) / (max_ref - min_ref).
    at::Tensor statesScore(const at::Tensor& states, int64_t end) const;

    int64_t m_sinkCount;
    int64_t m_lagSize;
    bool m_crossScoring;
};

} // namespace kvscope::press
