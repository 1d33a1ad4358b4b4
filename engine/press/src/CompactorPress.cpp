// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/press/CompactorPress.h"

#include "kvscope/press/LeverageScorePress.h"
#include "kvscope/press/NonCausalAttentionPress.h"

#include <ATen/ATen.h>
#include <algorithm>
#include <stdexcept>

namespace kvscope::press {

CompactorPress::CompactorPress(int64_t sinkStart, int64_t sinkEnd, int64_t chunkSize, int64_t sketchDimension,
                               std::optional<double> blending, uint64_t seed)
    : m_sinkStart(sinkStart), m_sinkEnd(sinkEnd), m_chunkSize(chunkSize), m_sketchDimension(sketchDimension),
      m_blending(blending), m_seed(seed) {
    if (chunkSize < 1 || sketchDimension < 1) {
        throw std::invalid_argument("Compactor's chunk_size and sketch_dimension must be at least 1");
    }
}

at::Tensor CompactorPress::score(const PressInputs& inputs, int64_t keptCount) const {
    // Without a ratio kvpress's own fallback weight applies.
    return m_blending ? scoreAt(inputs, keptCount, *m_blending) : scoreAt(inputs, keptCount, 0.35);
}

at::Tensor CompactorPress::scoreAt(const PressInputs& inputs, int64_t, double ratio) const {
    require(inputs.hiddenStates, "hidden states", name());
    require(inputs.queryWeight, "query projection", name());
    require(inputs.cos, "rotary rows", name());
    require(inputs.values, "values", name());
    requirePrefillRows(inputs);
    const int64_t length = inputs.keys.size(2);
    const int64_t left = std::min(m_sinkStart, length);
    const int64_t right = std::min(m_sinkEnd, std::max<int64_t>(0, length - left));
    const int64_t rows = length - left - right;
    if (rows < 2) {
        refuseLongerThanPrompt("sink_size_start + sink_size_end", m_sinkStart + m_sinkEnd, length);
    }
    const at::Tensor leverage = LeverageScorePress::sliceScores(inputs, left, rows, m_sketchDimension, m_seed)
                                    .to(inputs.keys.scalar_type());
    const at::Tensor attention = NonCausalAttentionPress::sliceScores(inputs, left, rows, m_chunkSize);
    const at::Tensor scores = blendingAt(ratio) * leverage + attention;
    // The sinks tie with the best real token: kvpress pads with the max, not max + 1.
    return at::constant_pad_nd(scores, {left, right}, scores.max().item<double>());
}

} // namespace kvscope::press
