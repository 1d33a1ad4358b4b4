// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/press/RandomPress.h"

#include <ATen/ATen.h>

#include <random>

namespace kvscope::press {

RandomPress::RandomPress(uint64_t seed) : m_seed(seed) {}

at::Tensor RandomPress::score(const PressInputs& inputs, int64_t) const {
    // torch.rand on a fresh CPU generator: one MT19937 draw per element, its low 24 bits over 2^24.
    std::mt19937 generator(static_cast<std::mt19937::result_type>(m_seed & 0xFFFFFFFFu));
    at::Tensor scores = at::empty({inputs.keys.size(0), inputs.keys.size(1), inputs.keys.size(2)}, at::kFloat);
    float* data = scores.data_ptr<float>();
    for (int64_t index = 0; index < scores.numel(); ++index) {
        data[index] = static_cast<float>(generator() & 0xFFFFFFu) * (1.0f / 16777216.0f);
    }
    return scores.to(inputs.keys.device());
}

} // namespace kvscope::press
