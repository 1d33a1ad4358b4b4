// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/press/ObservedAttentionPress.h"

#include <ATen/ATen.h>

namespace kvscope::press {

at::Tensor ObservedAttentionPress::score(const PressInputs& inputs, int64_t) const {
    require(inputs.attentions, "attention weights", name());
    const int64_t length = inputs.attentions.size(-1);
    // Key j is seen by the T - j queries at or after it.
    const at::Tensor seen = at::arange(length, 0, -1, inputs.attentions.options());
    return groupMean(inputs.attentions.sum(2) / seen, inputs.numKeyValueHeads);
}

} // namespace kvscope::press
