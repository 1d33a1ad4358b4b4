// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/press/Press.h"

namespace kvscope::press {

/// ExpectedAttention: the attention expected from future queries, modelled as a Gaussian rotated to future positions.
class ExpectedAttentionPress : public Press {
public:
    ExpectedAttentionPress(int64_t futurePositions = 512, int64_t sinkCount = 4, bool useCovariance = true,
                           bool useValueNorm = true, double epsilon = 0.0);
    std::string name() const override { return "expected_attention"; }
    std::string referenceName() const override { return "ExpectedAttentionPress"; }
    PressReads reads() const override { return {true, true, false}; }
    at::Tensor score(const PressInputs& inputs, int64_t keptCount) const override;
    /// R [D, D] = mean over positions p in [first, first + count) of diag(cos_p) + P diag(sin_p), with the
    /// layer's own frequencies (a partial rotary head leaves its other dimensions alone); CapPress shares it.
    static at::Tensor averageRotation(const PressInputs& inputs, int64_t first, int64_t count);

private:
    int64_t m_futurePositions;
    int64_t m_sinkCount;
    bool m_useCovariance;
    bool m_useValueNorm;
    double m_epsilon;
};

} // namespace kvscope::press
