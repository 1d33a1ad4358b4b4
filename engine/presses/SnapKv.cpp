// SPDX-License-Identifier: GPL-3.0-or-later
// SnapKV (kvpress's SnapKVPress): the attention of the last window of queries, pooled.
#include "kvscope/config/PressRegistration.h"

KVSCOPE_PRESS_DESCRIPTION(snapkv) {
    kvscope::config::PressDescription press;
    press.name = "snapkv";
    press.referenceName = "SnapKVPress";
    press.displayName = "SnapKV";
    press.kind = "scorer";
    press.phase = "prefill";
    press.summary = "attention of the last window_size queries, pooled; the window is kept";
    press.options = {kvscope::config::PressOption::window(), kvscope::config::PressOption::kernel()};
    press.sentence =
        "the {dropped} whose attention from the last {window_size} queries was lowest were dropped";
    press.policy.queries = true;
    return press;
}

#if KVSCOPE_PRESS_ENGINE
#include "kvscope/config/PressDescriptions.h"
#include "kvscope/model/TensorOps.h"
#include "kvscope/press/PressFactory.h"
#include "kvscope/press/SnapKvPress.h"

#include <ATen/ATen.h>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace kvscope::press {

SnapKvPress::SnapKvPress(int64_t windowSize, int64_t kernelSize) : m_windowSize(windowSize), m_kernelSize(kernelSize) {}

at::Tensor SnapKvPress::windowAttention(const PressInputs& inputs, int64_t window) {
    require(inputs.hiddenStates, "hidden states", "window-attention");
    require(inputs.queryWeight, "query projection", "window-attention");
    require(inputs.cos, "rotary rows", "window-attention");
    const int64_t length = inputs.keys.size(2);
    if (window >= length || window > inputs.hiddenStates.size(1)) {
        throw std::invalid_argument("window_size " + std::to_string(window) + " needs more tokens than " +
                                    std::to_string(length) + " cached and " +
                                    std::to_string(inputs.hiddenStates.size(1)) + " hidden rows");
    }
    // The last rotary rows; in decoding kvpress hands over only the current step's row, which broadcasts.
    const int64_t rows = std::min(window, inputs.cos.size(-2));
    const at::Tensor cos = inputs.cos.narrow(-2, inputs.cos.size(-2) - rows, rows).unsqueeze(1);
    const at::Tensor sin = inputs.sin.narrow(-2, inputs.sin.size(-2) - rows, rows).unsqueeze(1);
    const at::Tensor query = model::ops::applyRotary(queries(inputs, window), cos, sin);
    at::Tensor keys = inputs.keys;
    const int64_t groups = inputs.numHeads / inputs.numKeyValueHeads;
    if (groups > 1) {
        keys = keys.repeat_interleave(groups, 1);
    }
    at::Tensor logits = at::matmul(query, keys.transpose(2, 3)) / std::sqrt(static_cast<double>(inputs.headDim));
    // Window query i sees keys up to T - window + i.
    const auto longs = inputs.keys.options().dtype(at::kLong);
    const at::Tensor masked = at::arange(length, longs).unsqueeze(0) >
                              (at::arange(window, longs) + (length - window)).unsqueeze(1);
    logits = logits.masked_fill(masked, -std::numeric_limits<double>::infinity());
    return at::softmax(logits, -1, at::kFloat).to(query.scalar_type()).narrow(-1, 0, length - window);
}

at::Tensor SnapKvPress::score(const PressInputs& inputs, int64_t) const {
    require(inputs.hiddenStates, "hidden states", name());
    const int64_t length = inputs.keys.size(2);
    const int64_t rows = inputs.hiddenStates.size(1);
    if (m_windowSize >= length) {
        refuseLongerThanPrompt("window_size", m_windowSize, length);
    }
    if (m_windowSize > rows) {
        // Only where the press scores a cache longer than the hidden states it is handed (DecodingPress).
        throw std::invalid_argument(displayName() + "'s window_size (" + std::to_string(m_windowSize) +
                                    ") needs as many hidden states, but the decoding press holds " +
                                    std::to_string(rows) +
                                    ": raise hidden_states_buffer_size or give --press-option "
                                    "window_size=" +
                                    std::to_string(config::PressDescriptions::fitBelowPrompt(2 * rows)));
    }
    at::Tensor scores = windowAttention(inputs, m_windowSize).mean(-2);
    scores = at::avg_pool1d(scores, {m_kernelSize}, {1}, {m_kernelSize / 2}, false, true);
    return withPads(groupMean(scores, inputs.numKeyValueHeads), m_windowSize, /*before=*/false);
}

} // namespace kvscope::press

KVSCOPE_PRESS_FACTORY(snapkv) {
    kvscope::press::PressFactory factory;
    factory.scorer = [](const kvscope::press::PressOptions& options) {
        return std::make_shared<kvscope::press::SnapKvPress>(options.integer("window_size", 1),
                                                             options.integer("kernel_size", 1));
    };
    return factory;
}
#endif
