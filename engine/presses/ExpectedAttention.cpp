// SPDX-License-Identifier: GPL-3.0-or-later
// ExpectedAttention (kvpress's ExpectedAttentionPress): attention expected from future queries.
#include "kvscope/config/PressRegistration.h"

KVSCOPE_PRESS_DESCRIPTION(expected_attention) {
    kvscope::config::PressDescription press;
    press.name = "expected_attention";
    press.referenceName = "ExpectedAttentionPress";
    press.displayName = "Expected attention";
    press.kind = "scorer";
    press.phase = "prefill";
    press.summary = "the attention expected from future queries (Gaussian queries, average RoPE)";
    press.options = {
        {"n_future_positions", "int", "512", "future positions the query statistics are rotated to"},
        {"n_sink", "int", "4", "first tokens always kept and left out of the statistics",
         /*belowPrompt=*/true},
        {"use_covariance", "bool", "true", "add the query covariance term to the expected logits"},
        {"use_vnorm", "bool", "true", "weigh scores by the value norms"},
        {"epsilon", "float", "0", "added to the scores before the value-norm weighting"}};
    press.sentence =
        "the {dropped} with the lowest attention expected from the next {n_future_positions} queries were "
        "dropped";
    press.policy.values = true;
    press.policy.queries = true;
    return press;
}

#if KVSCOPE_PRESS_ENGINE
#include "kvscope/model/TensorOps.h"
#include "kvscope/press/ExpectedAttentionPress.h"
#include "kvscope/press/PressFactory.h"

#include <ATen/ATen.h>
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace kvscope::press {

ExpectedAttentionPress::ExpectedAttentionPress(int64_t futurePositions, int64_t sinkCount, bool useCovariance,
                                               bool useValueNorm, double epsilon)
    : m_futurePositions(futurePositions), m_sinkCount(sinkCount), m_useCovariance(useCovariance),
      m_useValueNorm(useValueNorm), m_epsilon(epsilon) {}

at::Tensor ExpectedAttentionPress::averageRotation(const PressInputs& inputs, int64_t first, int64_t count) {
    const int64_t dim = inputs.headDim;
    const auto longs = inputs.keys.options().dtype(at::kLong);
    const at::Tensor frequencies = inputs.inverseFrequencies.defined()
                                       ? inputs.inverseFrequencies
                                       : model::ops::inverseFrequencies(dim, inputs.ropeTheta, std::nullopt,
                                                                        inputs.keys.device());
    const auto [cos, sin] = model::ops::rotary(at::arange(first, first + count, longs).unsqueeze(0), frequencies);
    const int64_t rotated = cos.size(-1);
    const at::Tensor identity = at::eye(rotated, cos.options());
    at::Tensor swap = at::zeros({rotated, rotated}, cos.options());
    const int64_t half = rotated / 2;
    swap.narrow(0, half, half).narrow(1, 0, half).copy_(at::eye(half, cos.options()));
    swap.narrow(0, 0, half).narrow(1, half, half).copy_(-at::eye(half, cos.options()));
    at::Tensor rotation = at::eye(dim, cos.options());
    rotation.narrow(0, 0, rotated).narrow(1, 0, rotated).copy_(
        (cos[0][0].unsqueeze(1) * identity + sin[0][0].unsqueeze(1) * swap).mean(0));
    return rotation;
}

at::Tensor ExpectedAttentionPress::score(const PressInputs& inputs, int64_t) const {
    require(inputs.hiddenStates, "hidden states", name());
    require(inputs.queryWeight, "query projection", name());
    const int64_t length = inputs.keys.size(2);
    const int64_t rows = inputs.hiddenStates.size(1);
    if (length <= m_sinkCount || rows <= m_sinkCount) {
        refuseLongerThanPrompt("n_sink", m_sinkCount, std::min(length, rows));
    }
    const int64_t dim = inputs.headDim;
    // Statistics of the pre-RoPE queries after the sinks.
    const at::Tensor query = queries(inputs, rows - m_sinkCount); // [B, H, N, D]
    const at::Tensor mean = query.mean(2);                         // [B, H, D]
    const at::Tensor centered = query - mean.unsqueeze(2);
    const at::Tensor covariance = at::matmul(centered.transpose(2, 3), centered) / static_cast<double>(rows - m_sinkCount);

    const at::Tensor rotation = averageRotation(inputs, rows, m_futurePositions).to(query.scalar_type());
    const at::Tensor rotatedMean = at::matmul(mean, rotation.t());

    at::Tensor keys = inputs.keys.narrow(2, m_sinkCount, length - m_sinkCount);
    const int64_t groups = inputs.numHeads / inputs.numKeyValueHeads;
    if (groups > 1) {
        keys = keys.repeat_interleave(groups, 1);
    }
    at::Tensor scores = at::matmul(keys, rotatedMean.unsqueeze(-1)).squeeze(-1) / std::sqrt(static_cast<double>(dim));
    if (m_useCovariance) {
        const at::Tensor rotatedCovariance = at::matmul(rotation, at::matmul(covariance, rotation.t()));
        scores = scores + (at::matmul(keys, rotatedCovariance) * keys).sum(-1) / static_cast<double>(dim) / 2.0;
    }
    scores = groupMean(at::softmax(scores, -1), inputs.numKeyValueHeads);
    if (m_useValueNorm) {
        require(inputs.values, "values", name());
        scores = (scores + m_epsilon) * inputs.values.narrow(2, m_sinkCount, length - m_sinkCount).norm(2, -1);
    }
    return withPads(scores, m_sinkCount, /*before=*/true);
}

} // namespace kvscope::press

KVSCOPE_PRESS_FACTORY(expected_attention) {
    kvscope::press::PressFactory factory;
    factory.scorer = [](const kvscope::press::PressOptions& options) {
        return std::make_shared<kvscope::press::ExpectedAttentionPress>(
            options.integer("n_future_positions", 1), options.integer("n_sink", 0),
            options.flag("use_covariance"), options.flag("use_vnorm"),
            options.real("epsilon", 0.0, std::numeric_limits<double>::max()));
    };
    return factory;
}
#endif
