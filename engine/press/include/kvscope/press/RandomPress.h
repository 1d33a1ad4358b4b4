// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/press/Press.h"

namespace kvscope::press {

/// Random: scores drawn as torch.rand from a fresh CPU generator seeded with `seed` (MT19937, 24-bit floats).
class RandomPress : public Press {
public:
    explicit RandomPress(uint64_t seed = 0);
    std::string name() const override { return "random"; }
    std::string referenceName() const override { return "RandomPress"; }
    PressReads reads() const override { return {}; }
    at::Tensor score(const PressInputs& inputs, int64_t keptCount) const override;

private:
    uint64_t m_seed;
};

} // namespace kvscope::press
