// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/press/H2oPress.h"

#include "kvscope/press/TopKSelection.h"
#include "kvscope/config/PressDescriptions.h"

#include <ATen/ATen.h>

#include <stdexcept>

namespace kvscope::press {

H2oPress::H2oPress(int64_t budget, int64_t recentWindow) : m_budget(budget), m_recentWindow(recentWindow) {
    if (budget < 1) {
        throw std::invalid_argument("H2O's budget must be at least 1, got " + std::to_string(budget));
    }
    if (recentWindow < 0 || recentWindow > budget) {
        throw std::invalid_argument(
            "H2O's recent_window (" + std::to_string(recentWindow) + ") is part of its budget (" +
            std::to_string(budget) + ") and must be at most that: give --press-option recent_window=" +
            std::to_string(defaultRecentWindow(budget)) + " or leave it out (budget / 8)");
    }
}

int64_t H2oPress::defaultRecentWindow(int64_t budget) {
    return config::PressDescriptions::h2oRecentWindow(budget);
}

at::Tensor H2oPress::step(int64_t layerIndex, const at::Tensor& attentions, int64_t numKeyValueHeads) {
    return stepReceived(layerIndex, attentions.to(at::kFloat).sum(2), numKeyValueHeads);
}

at::Tensor H2oPress::stepReceived(int64_t layerIndex, const at::Tensor& receivedPerHead, int64_t numKeyValueHeads) {
    const int64_t batch = receivedPerHead.size(0);
    const int64_t length = receivedPerHead.size(-1);
    // Attention received this pass (summed over the queries), averaged over each KV head's query heads.
    const at::Tensor received =
        receivedPerHead.to(at::kFloat).reshape({batch, numKeyValueHeads, -1, length}).mean(2);
    at::Tensor& scores = m_scores[layerIndex];
    if (!scores.defined()) {
        scores = at::zeros({batch, numKeyValueHeads, 0}, received.options());
    }
    if (scores.size(2) > length) {
        throw std::invalid_argument("h2o: the layer holds " + std::to_string(scores.size(2)) +
                                    " scored slots but the attention covers only " + std::to_string(length));
    }
    scores = at::cat({scores, at::zeros({batch, numKeyValueHeads, length - scores.size(2)}, received.options())}, 2) +
             received;
    if (length <= m_budget) {
        return {};
    }
    const int64_t older = length - m_recentWindow;
    const int64_t heavyCount = m_budget - m_recentWindow;
    const auto longs = scores.options().dtype(at::kLong);
    at::Tensor kept;
    if (older - heavyCount == 1) {
        // One token over the budget, as at every decoding step: the one older slot the canonical top-k leaves
        // out goes (the lowest score; of equal lowest scores the latest), found without sorting the layer.
        const at::Tensor dropped =
            (older - 1) - scores.narrow(2, 0, older).flip({2}).argmin(2, /*keepdim=*/true);
        const at::Tensor slots = at::arange(length - 1, longs).expand({batch, numKeyValueHeads, length - 1});
        kept = slots + slots.ge(dropped).to(at::kLong);
    } else {
        const at::Tensor heavy = TopKSelection::largest(scores.narrow(2, 0, older), heavyCount);
        const at::Tensor recent =
            at::arange(older, length, longs).expand({batch, numKeyValueHeads, m_recentWindow});
        kept = std::get<0>(at::sort(at::cat({heavy, recent}, 2), -1));
    }
    scores = scores.gather(2, kept);
    return kept;
}

at::Tensor H2oPress::accumulated(int64_t layerIndex) const {
    const auto found = m_scores.find(layerIndex);
    return found == m_scores.end() ? at::Tensor() : found->second;
}

} // namespace kvscope::press
