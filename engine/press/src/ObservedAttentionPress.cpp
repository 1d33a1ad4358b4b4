// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/press/ObservedAttentionPress.h"

#include <ATen/ATen.h>

namespace kvscope::press {

at::Tensor ObservedAttentionPress::score(const PressInputs& inputs, int64_t) const {
    require(inputs.attentionReceived.defined() ? inputs.attentionReceived : inputs.attentions, "attention weights",
            name());
    const at::Tensor received = inputs.receivedAttention();
    const int64_t length = received.size(-1);
    // Key j is seen by the T - j queries at or after it.
    const at::Tensor seen = at::arange(length, 0, -1, received.options());
    return groupMean(received / seen, inputs.numKeyValueHeads);
}

} // namespace kvscope::press
