// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/press/PressWorkload.h"

#include "kvscope/model/TensorOps.h"

#include <ATen/ATen.h>

#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>

namespace kvscope::press {

PressWorkload::PressWorkload(int64_t tokens, PressWorkloadShape shape, uint64_t seed) : m_tokens(tokens), m_shape(shape) {
    if (tokens < 2 || shape.heads < 1 || shape.keyValueHeads < 1 || shape.headDim < 2 || shape.headDim % 2 != 0 ||
        shape.heads % shape.keyValueHeads != 0) {
        throw std::invalid_argument("a press workload needs at least 2 tokens, an even head dim and query heads (" +
                                    std::to_string(shape.heads) + ") that are a multiple of KV heads (" +
                                    std::to_string(shape.keyValueHeads) + ")");
    }
    at::manual_seed(seed);
    const int64_t hidden = shape.heads * shape.headDim;
    const double scale = 1.0 / std::sqrt(static_cast<double>(hidden));
    m_inputs.keys = at::randn({1, shape.keyValueHeads, tokens, shape.headDim});
    m_inputs.values = at::randn({1, shape.keyValueHeads, tokens, shape.headDim});
    m_inputs.hiddenStates = at::randn({1, tokens, hidden});
    m_inputs.queryWeight = at::randn({shape.heads * shape.headDim, hidden}) * scale;
    m_keyWeight = at::randn({shape.keyValueHeads * shape.headDim, hidden}) * scale;
    m_valueWeight = at::randn({shape.keyValueHeads * shape.headDim, hidden}) * scale;
    // Drawn after the others, so that the tensors above stay those of earlier measurements.
    m_inputs.outputWeight = at::randn({hidden, shape.heads * shape.headDim}) * scale;
    m_inputs.keyWeight = m_keyWeight;
    m_inputs.inverseFrequencies = model::ops::inverseFrequencies(shape.headDim, 10000.0, std::nullopt, at::kCPU);
    const auto [cos, sin] = model::ops::rotary(at::arange(tokens).unsqueeze(0), m_inputs.inverseFrequencies);
    m_inputs.cos = cos.squeeze(1);
    m_inputs.sin = sin.squeeze(1);
    m_inputs.numHeads = shape.heads;
    m_inputs.numKeyValueHeads = shape.keyValueHeads;
    m_inputs.headDim = shape.headDim;
}

PressInputs PressWorkload::inputsWithAttentions() const {
    const at::Tensor query = projectedQueries(m_inputs.hiddenStates, m_inputs.cos.unsqueeze(1), m_inputs.sin.unsqueeze(1));
    const at::Tensor mask = at::ones({m_tokens, m_tokens}, at::kBool).tril().view({1, 1, m_tokens, m_tokens});
    PressInputs inputs = m_inputs;
    model::ops::attend(query, m_inputs.keys, m_inputs.values, mask, 1.0 / std::sqrt(static_cast<double>(m_shape.headDim)),
                       0.0, &inputs.attentions);
    return inputs;
}

PressInputs PressWorkload::decodingPass(int64_t length) const {
    if (length < 1 || length > m_tokens) {
        throw std::invalid_argument("a decoding pass of the workload holds 1 to " + std::to_string(m_tokens) +
                                    " tokens, not " + std::to_string(length));
    }
    PressInputs pass = m_inputs;
    pass.keys = m_inputs.keys.narrow(2, 0, length);
    pass.values = m_inputs.values.narrow(2, 0, length);
    pass.hiddenStates = m_inputs.hiddenStates.narrow(1, length - 1, 1);
    pass.cos = m_inputs.cos.narrow(1, length - 1, 1);
    pass.sin = m_inputs.sin.narrow(1, length - 1, 1);
    return pass;
}

at::Tensor PressWorkload::queries(int64_t first, int64_t count) const {
    if (first < 0 || count < 1 || first + count > m_tokens) {
        throw std::invalid_argument("the workload's queries are those of tokens 0 to " +
                                    std::to_string(m_tokens - 1));
    }
    return projectedQueries(m_inputs.hiddenStates.narrow(1, first, count),
                            m_inputs.cos.narrow(1, first, count).unsqueeze(1),
                            m_inputs.sin.narrow(1, first, count).unsqueeze(1));
}

at::Tensor PressWorkload::projectedQueries(const at::Tensor& hidden, const at::Tensor& cos, const at::Tensor& sin) const {
    return model::ops::applyRotary(
        model::ops::splitHeads(model::ops::linear(hidden, m_inputs.queryWeight), m_shape.heads), cos, sin);
}

at::Tensor PressWorkload::prefillAttention() const {
    const at::Tensor& hidden = m_inputs.hiddenStates;
    const at::Tensor cos = m_inputs.cos.unsqueeze(1);
    const at::Tensor sin = m_inputs.sin.unsqueeze(1);
    const at::Tensor keys =
        model::ops::applyRotary(model::ops::splitHeads(model::ops::linear(hidden, m_keyWeight), m_shape.keyValueHeads), cos, sin);
    const at::Tensor values = model::ops::splitHeads(model::ops::linear(hidden, m_valueWeight), m_shape.keyValueHeads);
    const at::Tensor mask = at::ones({m_tokens, m_tokens}, at::kBool).tril().view({1, 1, m_tokens, m_tokens});
    return model::ops::attend(projectedQueries(hidden, cos, sin), keys, values, mask,
                              1.0 / std::sqrt(static_cast<double>(m_shape.headDim)));
}

at::Tensor PressWorkload::decodeStepAttention(int64_t cached) const {
    if (cached < 1 || cached >= m_tokens) {
        throw std::invalid_argument("a decode step of the workload follows 1 to " + std::to_string(m_tokens - 1) +
                                    " cached tokens, not " + std::to_string(cached));
    }
    const at::Tensor hidden = m_inputs.hiddenStates.narrow(1, cached, 1);
    const at::Tensor cos = m_inputs.cos.narrow(1, cached, 1).unsqueeze(1);
    const at::Tensor sin = m_inputs.sin.narrow(1, cached, 1).unsqueeze(1);
    const at::Tensor key =
        model::ops::applyRotary(model::ops::splitHeads(model::ops::linear(hidden, m_keyWeight), m_shape.keyValueHeads), cos, sin);
    const at::Tensor value = model::ops::splitHeads(model::ops::linear(hidden, m_valueWeight), m_shape.keyValueHeads);
    const at::Tensor keys = at::cat({m_inputs.keys.narrow(2, 0, cached), key}, 2);
    const at::Tensor values = at::cat({m_inputs.values.narrow(2, 0, cached), value}, 2);
    const at::Tensor mask = at::ones({1, 1, 1, cached + 1}, at::kBool);
    return model::ops::attend(projectedQueries(hidden, cos, sin), keys, values, mask,
                              1.0 / std::sqrt(static_cast<double>(m_shape.headDim)));
}

} // namespace kvscope::press
