// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/press/StreamingLlmPress.h"

#include <ATen/ATen.h>

#include <stdexcept>

namespace kvscope::press {

StreamingLlmPress::StreamingLlmPress(int64_t sinkCount) : m_sinkCount(sinkCount) {}

at::Tensor StreamingLlmPress::score(const PressInputs& inputs, int64_t keptCount) const {
    const int64_t length = inputs.keys.size(2);
    if (length <= m_sinkCount) {
        refuseLongerThanPrompt("n_sink", m_sinkCount, length);
    }
    // Sinks and the most recent slots score 1, the evicted middle 0.
    at::Tensor scores = at::ones({inputs.keys.size(0), inputs.keys.size(1), length}, inputs.keys.options());
    scores.narrow(-1, m_sinkCount, length - keptCount).zero_();
    return scores;
}

} // namespace kvscope::press
