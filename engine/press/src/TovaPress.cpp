// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/press/TovaPress.h"

#include "kvscope/press/SnapKvPress.h"

#include <ATen/ATen.h>
#include <stdexcept>

namespace kvscope::press {

at::Tensor TovaPress::score(const PressInputs& inputs, int64_t) const {
    if (inputs.keys.size(2) < 2) {
        throw std::invalid_argument(displayName() +
                                    " ranks the tokens before the last one by its attention: give a "
                                    "prompt of at least 2 tokens");
    }
    // The last query's attention, averaged over every query head (not per group), for every KV head.
    const at::Tensor attention = SnapKvPress::windowAttention(inputs, 1); // [B, H, 1, T - 1]
    const at::Tensor scores = attention.mean(1).expand({-1, inputs.numKeyValueHeads, -1}).contiguous();
    return withPads(scores, 1, /*before=*/false);
}

} // namespace kvscope::press
