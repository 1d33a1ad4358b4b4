// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/press/Press.h"

namespace kvscope::press {

/// ObservedAttention: the attention each key received, averaged over the queries that see it.
class ObservedAttentionPress : public Press {
public:

    std::string name() const override { return "observed_attention"; }
    std::string referenceName() const override { return "ObservedAttentionPress"; }
    PressReads reads() const override { return {false, false, true}; }
    at::Tensor score(const PressInputs& inputs, int64_t keptCount) const override;
};

} // namespace kvscope::press
