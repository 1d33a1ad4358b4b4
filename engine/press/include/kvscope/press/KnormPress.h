// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/press/Press.h"

namespace kvscope::press {

/// Knorm: keeps the keys of smallest L2 norm (score -|k|).
class KnormPress : public Press {
public:

    std::string name() const override { return "knorm"; }
    std::string referenceName() const override { return "KnormPress"; }
    PressReads reads() const override { return {}; }
    at::Tensor score(const PressInputs& inputs, int64_t keptCount) const override;
};

} // namespace kvscope::press
