// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/press/Press.h"

namespace kvscope::press {

/// CAP: scores each token by the ridge leverage of its value among the values weighted by how well their
/// keys align with the average future query (ExpectedAttention's rotation); the first `sinkCount` are kept.
class CapPress : public Press {
public:
    CapPress(double tau = 5.0, int64_t futurePositions = 512, int64_t sinkCount = 4, double epsilon = 1e-6);
    std::string name() const override { return "cap"; }
    std::string referenceName() const override { return "CapPress"; }
    PressReads reads() const override { return {true, true, false}; }
    at::Tensor score(const PressInputs& inputs, int64_t keptCount) const override;

private:
    double m_tau;
    int64_t m_futurePositions;
    int64_t m_sinkCount;
    double m_epsilon;
};

} // namespace kvscope::press
