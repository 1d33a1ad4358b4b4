// SPDX-License-Identifier: GPL-3.0-or-later
// CAP (kvpress's CapPress): ridge leverage of the values, weighted by alignment with future queries.
#include "kvscope/config/PressRegistration.h"

KVSCOPE_PRESS_DESCRIPTION(cap) {
    kvscope::config::PressDescription press;
    press.name = "cap";
    press.referenceName = "CapPress";
    press.displayName = "CAP";
    press.kind = "scorer";
    press.phase = "prefill";
    press.summary = "ridge leverage of each value among values weighted by key alignment with future queries";
    press.options = {{"tau", "float", "5", "sharpness of the key-alignment weights"},
                     {"n_future_positions", "int", "512", "future positions the average query is rotated to"},
                     {"n_sink", "int", "4", "first tokens always kept", /*belowPrompt=*/true},
                     {"epsilon", "float", "0.000001", "added to each weight in the capacity matrix"}};
    press.sentence = "the first {n_sink} stay; the {dropped} whose values added the least capacity for the next "
                     "{n_future_positions} queries were dropped";
    press.policy.values = true;
    press.policy.queries = true;
    return press;
}

#if KVSCOPE_PRESS_ENGINE
#include "kvscope/press/ExpectedAttentionPress.h"
#include "kvscope/press/PressFactory.h"

#include <ATen/ATen.h>
#include <limits>
#include <stdexcept>

namespace kvscope::press {
namespace {

/// CAP: scores each token by the ridge leverage of its value among the values weighted by how well their
/// keys align with the average future query (ExpectedAttention's rotation); the first `sinkCount` are kept.
class CapPress : public Press {
public:
    CapPress(double tau = 5.0, int64_t futurePositions = 512, int64_t sinkCount = 4, double epsilon = 1e-6);
    std::string name() const override { return "cap"; }
    std::string referenceName() const override { return "CapPress"; }
    PressReads reads() const override { return {true, true, false}; }
    at::Tensor score(const PressInputs& inputs, int64_t keptCount) const override;

private:
    double m_tau;
    int64_t m_futurePositions;
    int64_t m_sinkCount;
    double m_epsilon;
};

CapPress::CapPress(double tau, int64_t futurePositions, int64_t sinkCount, double epsilon)
    : m_tau(tau), m_futurePositions(futurePositions), m_sinkCount(sinkCount), m_epsilon(epsilon) {
    if (futurePositions < 1) {
        throw std::invalid_argument("CAP's n_future_positions must be at least 1, got " +
                                    std::to_string(futurePositions));
    }
}

at::Tensor CapPress::score(const PressInputs& inputs, int64_t) const {
    require(inputs.hiddenStates, "hidden states", name());
    require(inputs.queryWeight, "query projection", name());
    require(inputs.values, "values", name());
    const int64_t length = inputs.keys.size(2);
    const int64_t rows = inputs.hiddenStates.size(1);
    if (length <= m_sinkCount || rows <= m_sinkCount) {
        refuseLongerThanPrompt("n_sink", m_sinkCount, std::min(length, rows));
    }
    // The anchor: pre-RoPE queries after the sinks, turned by the average rotation of the next positions.
    const at::Tensor rotation = ExpectedAttentionPress::averageRotation(inputs, rows, m_futurePositions)
                                    .to(inputs.keys.scalar_type());
    const at::Tensor anchor =
        at::matmul(queries(inputs, rows - m_sinkCount), rotation.t()).mean(2); // [B, H, D]
    const at::Tensor keys =
        repeatKv(inputs.keys.narrow(2, m_sinkCount, length - m_sinkCount), inputs.numHeads);
    const at::Tensor values =
        repeatKv(inputs.values.narrow(2, m_sinkCount, length - m_sinkCount), inputs.numHeads);
    const auto unit = [](const at::Tensor& x) {
        return x / x.norm(2, -1, /*keepdim=*/true).clamp_min(1e-12);
    };
    const at::Tensor alignment =
        at::matmul(unit(keys), unit(anchor).unsqueeze(-1)).squeeze(-1).clamp(-1.0, 1.0);
    const at::Tensor logits = m_tau * alignment;
    const at::Tensor weights = at::exp(logits - std::get<0>(logits.max(-1, /*keepdim=*/true)));
    // A = I + sum_t (w_t + eps) v_t v_t^T; the leverage of v_t is v_t^T A^{-1} v_t.
    const at::Tensor scaled = values * at::sqrt(weights + m_epsilon).unsqueeze(-1);
    const int64_t dim = values.size(-1);
    const at::Tensor capacity =
        (at::eye(dim, values.options()).view({1, 1, dim, dim}) + at::matmul(scaled.transpose(2, 3), scaled))
            .to(at::kFloat);
    const at::Tensor columns = values.transpose(2, 3).to(at::kFloat);
    const at::Tensor leverage = (columns * at::linalg_solve(capacity, columns)).sum(2);
    const at::Tensor scores =
        groupMean((weights * leverage).to(inputs.keys.scalar_type()), inputs.numKeyValueHeads);
    return withPads(scores, m_sinkCount, /*before=*/true);
}

} // namespace
} // namespace kvscope::press

KVSCOPE_PRESS_FACTORY(cap) {
    kvscope::press::PressFactory factory;
    factory.scorer = [](const kvscope::press::PressOptions& options) {
        constexpr double unbounded = std::numeric_limits<double>::max();
        return std::make_shared<kvscope::press::CapPress>(options.real("tau", 0.0, unbounded),
                                                          options.integer("n_future_positions", 1),
                                                          options.integer("n_sink", 0),
                                                          options.real("epsilon", 0.0, unbounded));
    };
    return factory;
}
#endif
