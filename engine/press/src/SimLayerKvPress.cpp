// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/press/SimLayerKvPress.h"

#include "kvscope/press/SnapKvPress.h"

#include <ATen/ATen.h>
#include <algorithm>
#include <stdexcept>

namespace kvscope::press {
namespace {

/// The start of Python's `x[s:]` on a sequence of `length`.
int64_t sliceStart(int64_t start, int64_t length) {
    return start < 0 ? std::max<int64_t>(0, length + start) : std::min(start, length);
}

} // namespace

SimLayerKvPress::SimLayerKvPress(double lazyThreshold, int64_t lastCount, int64_t recentCount,
                                 int64_t initialCount)
    : m_lazyThreshold(lazyThreshold), m_lastCount(lastCount), m_recentCount(recentCount),
      m_initialCount(initialCount) {
    if (!(lazyThreshold >= 0.0 && lazyThreshold <= 1.0)) {
        throw std::invalid_argument("SimLayerKV's lazy_threshold must be in [0, 1] (1 disables it), got " +
                                    std::to_string(lazyThreshold));
    }
    if (lastCount < 1 || recentCount < 0 || initialCount < 0) {
        throw std::invalid_argument("SimLayerKV needs n_last >= 1, n_recent >= 0 and n_initial >= 0");
    }
}

bool SimLayerKvPress::measures(int64_t length) const {
    return m_lazyThreshold != 1.0 && length > m_initialCount + m_recentCount + m_lastCount;
}

double SimLayerKvPress::lazyScore(const PressInputs& inputs) const {
    // SnapKV's window attention of the last n_last queries, averaged over batch, heads and queries, in
    // float32.
    const at::Tensor vector = SnapKvPress::windowAttention(inputs, m_lastCount).mean({0, 1, 2});
    const int64_t columns = vector.size(0);
    const int64_t initial = std::min(m_initialCount, columns);
    const int64_t recentStart = sliceStart(-m_recentCount, columns);
    return (vector.narrow(0, 0, initial).sum() + vector.narrow(0, recentStart, columns - recentStart).sum())
        .item<double>();
}

LazyLayerDecision SimLayerKvPress::decide(const PressInputs& inputs) const {
    LazyLayerDecision decision;
    const int64_t length = inputs.keys.size(2);
    const auto longs = inputs.keys.options().dtype(at::kLong);
    const auto keepAll = [&] {
        return at::arange(length, longs)
            .expand({inputs.keys.size(0), inputs.keys.size(1), length})
            .contiguous();
    };
    if (!measures(length)) {
        decision.keptIndices = keepAll();
        return decision;
    }
    decision.lazyScore = lazyScore(inputs);
    decision.measured = true;
    decision.lazy = decision.lazyScore > m_lazyThreshold;
    if (!decision.lazy) {
        decision.keptIndices = keepAll();
        return decision;
    }
    // kvpress keeps keys[:n_initial] ++ keys[-n_recent + n_last:]: n_recent - n_last recent tokens (all of
    // them when n_recent == n_last, Python's -0).
    const int64_t recentFrom = sliceStart(m_lastCount - m_recentCount, length);
    const at::Tensor kept =
        at::cat({at::arange(std::min(m_initialCount, length), longs), at::arange(recentFrom, length, longs)});
    decision.keptIndices = kept.expand({inputs.keys.size(0), inputs.keys.size(1), kept.size(0)}).contiguous();
    decision.reportedRatio =
        static_cast<double>(length - m_initialCount - m_recentCount + 1) / static_cast<double>(length);
    return decision;
}

} // namespace kvscope::press
