// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/press/AdaKvPress.h"

#include "kvscope/press/TopKSelection.h"

#include <ATen/ATen.h>

#include <limits>
#include <stdexcept>

namespace kvscope::press {

AdaKvPress::AdaKvPress(std::shared_ptr<const Press> base, double alphaSafeguard)
    : m_base(std::move(base)), m_alphaSafeguard(alphaSafeguard) {
    if (!(alphaSafeguard >= 0.0 && alphaSafeguard <= 1.0)) {
        throw std::invalid_argument("alpha_safeguard " + std::to_string(alphaSafeguard) + " is outside [0, 1]");
    }
}

AdaKvMask AdaKvPress::mask(const PressInputs& inputs, double ratio) const {
    const int64_t batch = inputs.keys.size(0);
    const int64_t heads = inputs.keys.size(1);
    const int64_t length = inputs.keys.size(2);
    AdaKvMask result;
    result.keptCount = static_cast<int64_t>(static_cast<double>(length) * (1.0 - ratio));
    result.safeCount = static_cast<int64_t>(static_cast<double>(result.keptCount) * m_alphaSafeguard);
    result.prunedCount = heads * (length - result.keptCount);
    result.masked = at::zeros({batch, heads, length}, inputs.keys.options().dtype(at::kBool));
    if (ratio == 0.0) {
        return result;
    }
    result.scores = m_base->score(inputs, result.keptCount);
    // Each head's best `safeCount` tokens can never be pruned.
    at::Tensor guarded = result.scores.clone();
    guarded.scatter_(-1, TopKSelection::largest(result.scores, result.safeCount),
                     std::numeric_limits<float>::max());
    const at::Tensor pruned = TopKSelection::smallest(guarded.reshape({batch, heads * length}), result.prunedCount);
    result.masked.view({batch, heads * length}).scatter_(-1, pruned, true);
    return result;
}

} // namespace kvscope::press
