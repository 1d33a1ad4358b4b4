// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/press/LagKvPress.h"

#include <ATen/ATen.h>
#include <stdexcept>

namespace kvscope::press {

LagKvPress::LagKvPress(int64_t sinkCount, int64_t lagSize, bool crossScoring)
    : m_sinkCount(sinkCount), m_lagSize(lagSize), m_crossScoring(crossScoring) {
    if (lagSize < 1) {
        throw std::invalid_argument("LagKV's lag_size must be at least 1, got " + std::to_string(lagSize));
    }
}

at::Tensor LagKvPress::statesScore(const at::Tensor& states, int64_t end) const {
    const int64_t batch = states.size(0);
    const int64_t heads = states.size(1);
    const at::Tensor partitions = states.narrow(2, m_sinkCount, end - m_sinkCount)
                                      .reshape({batch, heads, -1, m_lagSize, states.size(3)});
    const int64_t count = partitions.size(2);
    const at::Tensor reference = partitions.narrow(2, 1, count - 1);
    const at::Tensor scored = partitions.narrow(2, 0, count - 1);
    const at::Tensor low = std::get<0>(reference.min(-2, /*keepdim=*/true));
    const at::Tensor high = std::get<0>(reference.max(-2, /*keepdim=*/true));
    return ((scored - low) / (high - low)).std(-1, /*unbiased=*/true).softmax(-1);
}

std::map<std::string, at::Tensor> LagKvPress::details(const PressInputs& inputs) const {
    std::map<std::string, at::Tensor> named;
    if (at::Tensor lag = lagScores(inputs); lag.defined()) {
        named["lag_scores"] = std::move(lag);
    }
    return named;
}

at::Tensor LagKvPress::lagScores(const PressInputs& inputs) const {
    const int64_t length = inputs.keys.size(2);
    if (length < m_sinkCount + 2 * m_lagSize) {
        return {};
    }
    const int64_t end = m_sinkCount + ((length - m_sinkCount) / m_lagSize) * m_lagSize;
    const at::Tensor scores = (statesScore(inputs.keys, end) + statesScore(inputs.values, end)) / 2;
    return scores.reshape({inputs.keys.size(0), inputs.keys.size(1), -1});
}

at::Tensor LagKvPress::score(const PressInputs& inputs, int64_t) const {
    require(inputs.values, "values", name());
    const at::Tensor& keys = inputs.keys;
    const int64_t batch = keys.size(0);
    const int64_t heads = keys.size(1);
    const int64_t length = keys.size(2);
    if (length < m_sinkCount + 2 * m_lagSize) {
        // Too short to partition: the sinks score 1 and the rest rise linearly with position.
        at::Tensor scores = at::ones({batch, heads, length}, keys.options());
        if (length > m_sinkCount) {
            const int64_t rest = length - m_sinkCount;
            scores.narrow(2, m_sinkCount, rest)
                .copy_((at::arange(rest, keys.options().dtype(at::kLong)).to(at::kFloat) /
                        static_cast<float>(rest))
                           .to(keys.scalar_type()));
        }
        return scores;
    }
    const int64_t end = m_sinkCount + ((length - m_sinkCount) / m_lagSize) * m_lagSize;
    const int64_t tail = m_lagSize + length - end;
    at::Tensor scores = (statesScore(keys, end) + statesScore(inputs.values, end)) / 2;
    if (!m_crossScoring) {
        // The rank inside the partition over lag_size: exact, but equal across partitions.
        scores = (scores.argsort(int64_t{-1}, false).argsort(int64_t{-1}, false).to(at::kFloat) /
                  static_cast<float>(m_lagSize))
                     .to(keys.scalar_type());
    }
    const at::Tensor sinks = at::ones({batch, heads, m_sinkCount}, scores.options());
    const at::Tensor last = at::ones({batch, heads, tail}, scores.options());
    return at::cat({sinks, scores.reshape({batch, heads, -1}), last}, -1);
}

} // namespace kvscope::press
