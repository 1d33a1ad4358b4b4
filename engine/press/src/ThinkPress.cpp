// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/press/ThinkPress.h"

#include "kvscope/config/PressDescriptions.h"
#include "kvscope/model/TensorOps.h"
#include "kvscope/press/TopKSelection.h"

#include <ATen/ATen.h>
#include <stdexcept>

namespace kvscope::press {

ThinkPress::ThinkPress(double keyChannelRatio, int64_t windowSize)
    : m_keyChannelRatio(keyChannelRatio), m_windowSize(windowSize) {
    if (!(keyChannelRatio >= 0.0 && keyChannelRatio < 1.0)) {
        throw std::invalid_argument("ThinK's key_channel_compression_ratio must be in [0, 1), got " +
                                    std::to_string(keyChannelRatio));
    }
    if (windowSize < 1) {
        throw std::invalid_argument("ThinK's window_size must be at least 1, got " +
                                    std::to_string(windowSize));
    }
}

int64_t ThinkPress::prunedCount(int64_t headDim) const {
    return static_cast<int64_t>(static_cast<double>(headDim) * m_keyChannelRatio);
}

ChannelPruning ThinkPress::prune(const PressInputs& inputs) const {
    ChannelPruning pruning;
    pruning.keys = inputs.keys;
    const int64_t count = prunedCount(inputs.keys.size(3));
    if (m_keyChannelRatio == 0.0) {
        return pruning;
    }
    if (!inputs.hiddenStates.defined() || !inputs.queryWeight.defined() || !inputs.cos.defined()) {
        throw std::invalid_argument(
            "the ThinK press reads the layer's hidden states, query projection and rotary "
            "rows, which were not given");
    }
    const int64_t rows = inputs.hiddenStates.size(1);
    if (m_windowSize > rows) {
        throw std::invalid_argument(
            config::PressDescriptions::promptTooShort("ThinK", "window_size", m_windowSize, rows));
    }
    // The window's queries, rotated with the last rotary rows (one broadcast row while decoding).
    const int64_t rotaryRows = std::min(m_windowSize, inputs.cos.size(-2));
    const at::Tensor cos = inputs.cos.narrow(-2, inputs.cos.size(-2) - rotaryRows, rotaryRows).unsqueeze(1);
    const at::Tensor sin = inputs.sin.narrow(-2, inputs.sin.size(-2) - rotaryRows, rotaryRows).unsqueeze(1);
    PressInputs window = inputs;
    window.hiddenStates = inputs.hiddenStates.narrow(1, rows - m_windowSize, m_windowSize);
    const at::Tensor query = model::ops::splitHeads(
        model::ops::linear(window.hiddenStates, inputs.queryWeight, inputs.queryBias), inputs.numHeads);
    const at::Tensor normed =
        inputs.queryNormWeight.defined()
            ? model::ops::rmsNorm(query, inputs.queryNormWeight, inputs.normEpsilon, inputs.normAddsOne)
            : query;
    const at::Tensor rotated = model::ops::applyRotary(normed, cos, sin);
    const int64_t batch = inputs.keys.size(0);
    const int64_t kvHeads = inputs.keys.size(1);
    const int64_t dim = inputs.keys.size(3);
    const at::Tensor queryNorms = rotated.pow(2).mean(2).view({batch, kvHeads, -1, dim}).mean(2);
    pruning.channelScores = queryNorms * inputs.keys.pow(2).mean(2);
    pruning.prunedChannels = std::get<0>(at::sort(TopKSelection::smallest(pruning.channelScores, count), -1));
    at::Tensor keys = inputs.keys.clone();
    keys.scatter_(-1, pruning.prunedChannels.unsqueeze(2).expand({batch, kvHeads, keys.size(2), count}), 0.0);
    pruning.keys = keys;
    return pruning;
}

} // namespace kvscope::press
