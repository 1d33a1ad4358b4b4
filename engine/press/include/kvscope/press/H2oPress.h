// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>

namespace kvscope::press {

/// H2O (heavy hitters, beyond kvpress): every forward pass adds the attention each cached token received
/// (summed over the pass's queries, averaged over a KV head's query heads) to its running score. When a
/// layer holds more than `budget` tokens, each KV head keeps its `recentWindow` newest slots and the
/// `budget - recentWindow` older slots of highest accumulated attention, in slot order.
class H2oPress {
public:
    H2oPress(int64_t budget, int64_t recentWindow);
    /// The recent window when none is given (config::PressDescriptions::h2oRecentWindow: budget / 8).
    static int64_t defaultRecentWindow(int64_t budget);
    /// One pass of `layerIndex`: `attentions` [B, H, q, L] over the layer's L cached slots (this pass's
    /// tokens appended). Returns the kept slots [B, Hkv, budget] ascending, or an undefined tensor when the
    /// cache fits; the layer's scores follow the kept slots.
    at::Tensor step(int64_t layerIndex, const at::Tensor& attentions, int64_t numKeyValueHeads);
    /// step() from the weights already summed over the pass's queries, `received` [B, H, L]: what a model
    /// that attends a chunk of query rows at a time hands over.
    at::Tensor stepReceived(int64_t layerIndex, const at::Tensor& received, int64_t numKeyValueHeads);
    /// Accumulated attention [B, Hkv, L] of the layer's slots (undefined before its first pass).
    at::Tensor accumulated(int64_t layerIndex) const;
    int64_t budget() const { return m_budget; }
    int64_t recentWindow() const { return m_recentWindow; }
    void reset() { m_scores.clear(); }

private:
    int64_t m_budget;
    int64_t m_recentWindow;
    std::map<int64_t, at::Tensor> m_scores;
};

} // namespace kvscope::press
