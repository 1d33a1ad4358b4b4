// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/press/Press.h"

namespace kvscope::press {

/// KeyDiff: keeps the keys least like the head's average direction (score -cos(k, mean of unit keys)).
class KeyDiffPress : public Press {
public:
    std::string name() const override { return "keydiff"; }
    std::string referenceName() const override { return "KeyDiffPress"; }
    PressReads reads() const override { return {}; }
    at::Tensor score(const PressInputs& inputs, int64_t keptCount) const override;
};

} // namespace kvscope::press
