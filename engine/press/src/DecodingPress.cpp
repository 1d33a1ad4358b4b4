// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/press/DecodingPress.h"

#include <ATen/ATen.h>

#include <stdexcept>

namespace kvscope::press {

DecodingPress::DecodingPress(std::shared_ptr<const Press> base, int64_t compressionInterval, int64_t targetSize,
                             int64_t bufferSize)
    : m_base(std::move(base)), m_compressionInterval(compressionInterval), m_targetSize(targetSize),
      m_bufferSize(bufferSize) {
    if (compressionInterval < 1 || targetSize < 1 || bufferSize < 0) {
        throw std::invalid_argument("decoding press: compression_interval and target_size must be >= 1, "
                                    "hidden_states_buffer_size >= 0");
    }
}

double DecodingPress::targetRatio(int64_t length, int64_t target) {
    if (length <= target) {
        return 0.0;
    }
    const double tokens = static_cast<double>(length);
    double ratio = 1.0 - static_cast<double>(target) / tokens;
    double low = 0.0;
    double high = 1.0;
    for (int attempt = 0; attempt < 20; ++attempt) {
        const auto kept = static_cast<int64_t>(tokens * (1.0 - ratio));
        if (kept == target) {
            break;
        }
        if (kept > target) {
            low = ratio;
            ratio = (ratio + high) / 2.0;
        } else {
            high = ratio;
            ratio = (low + ratio) / 2.0;
        }
    }
    return ratio;
}

bool DecodingPress::append(const PressInputs& inputs, int64_t queryLength) {
    LayerState& state = m_layers[inputs.layerIndex];
    // Buffered per forward pass, not per token; a base press that reads no hidden states still counts rows.
    state.buffer.push_back(inputs.hiddenStates.defined()
                               ? inputs.hiddenStates
                               : at::empty({inputs.keys.size(0), queryLength, 0}, inputs.keys.options()));
    state.count += 1;
    if (state.count >= m_compressionInterval || queryLength >= m_targetSize) {
        return true;
    }
    if (m_bufferSize == 0) {
        state.buffer.clear();
    } else if (static_cast<int64_t>(state.buffer.size()) > m_bufferSize) {
        state.buffer.erase(state.buffer.begin(), state.buffer.end() - m_bufferSize);
    }
    return false;
}

DecodingStep DecodingPress::compress(const PressInputs& inputs) {
    LayerState& state = m_layers[inputs.layerIndex];
    DecodingStep result;
    result.compressed = true;
    PressInputs buffered = inputs;
    buffered.hiddenStates = at::cat(state.buffer, 1);
    result.bufferLength = buffered.hiddenStates.size(1);
    result.ratio = targetRatio(inputs.keys.size(2), m_targetSize);
    result.selection = m_base->select(buffered, result.ratio);
    state.count = 0;
    state.buffer.clear();
    return result;
}

} // namespace kvscope::press
