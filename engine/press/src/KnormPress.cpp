// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/press/KnormPress.h"

#include <ATen/ATen.h>

namespace kvscope::press {

at::Tensor KnormPress::score(const PressInputs& inputs, int64_t) const {
    return -inputs.keys.norm(2, -1);
}

} // namespace kvscope::press
