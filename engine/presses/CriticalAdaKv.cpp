// SPDX-License-Identifier: GPL-3.0-or-later
// CriticalAdaKV (kvpress's CriticalAdaKVPress): AdaKV's per-head budgets with CriticalKV's two stages,
// applied as a mask.
#include "kvscope/config/PressRegistration.h"

KVSCOPE_PRESS_DESCRIPTION(criticaladakv) {
    kvscope::config::PressDescription press;
    press.name = "criticaladakv";
    press.referenceName = "CriticalAdaKVPress";
    press.displayName = "CriticalAdaKV";
    press.kind = "wrapper";
    press.phase = "prefill";
    press.summary = "AdaKV's per-head budgets with CriticalKV's value-output weighting: heads mask different "
                    "numbers of tokens";
    press.options = {
        kvscope::config::PressOption::base(),
        {"alpha_safeguard", "float", "0.2", "share of each head's budget it always keeps"},
        {"epsilon", "float", "0.0001", "added to the scores before the value-output weighting"},
        {"first_stage_ratio", "float", "0.5", "share of each head's budget the base scores alone keep"}};
    press.sentence =
        "heads share one budget by {base_name}'s scores, each keeping its best {first_stage_ratio} "
        "share, then by those scores times the size of each value's contribution to the output "
        "(each keeps at least {alpha_safeguard} of its share): {base}";
    press.policy.values = true;
    press.policy.outputProjection = true;
    press.policy.effect = "masks";
    return press;
}

#if KVSCOPE_PRESS_ENGINE
#include "kvscope/press/PressCatalog.h"
#include "kvscope/press/PressFactory.h"
#include "kvscope/press/TopKSelection.h"

#include <ATen/ATen.h>
#include <limits>

namespace kvscope::press {
/// CriticalKV's value-output norms [B, Hkv, T] (engine/presses/CriticalKv.cpp), as kvpress reuses them.
at::Tensor criticalValueNorms(const PressInputs& inputs);
} // namespace kvscope::press

namespace {

using namespace kvscope::press;

/// After each layer's prefill, per batch row (kvpress's counts are right for batch 1, its only use):
/// (1) each head's top n_safe of the base scores are forced; (2) each head's budget is its share of the
/// top n_kept * Hkv forced scores of the row; (3) each head's top int(budget * first_stage_ratio) are
/// forced; (4) scores (s + epsilon) * vwl1norm; (5) each head keeps its top `budget`; the rest is masked.
class CriticalAdaKvPress : public CachePress {
public:
    CriticalAdaKvPress(std::shared_ptr<const Press> base, double alphaSafeguard, double epsilon,
                       double firstStageRatio)
        : m_base(std::move(base)), m_alphaSafeguard(alphaSafeguard), m_epsilon(epsilon),
          m_firstStageRatio(firstStageRatio) {}
    PressAction onPass(const PressInputs& inputs, const PressPass& pass) override {
        PressAction action;
        if (pass.index != 0 || pass.ratio <= 0.0) {
            return action;
        }
        const int64_t batch = inputs.keys.size(0);
        const int64_t heads = inputs.keys.size(1);
        const int64_t length = inputs.keys.size(2);
        const int64_t count = static_cast<int64_t>(static_cast<double>(length) * (1.0 - pass.ratio));
        const int64_t safe = static_cast<int64_t>(static_cast<double>(count) * m_alphaSafeguard);
        constexpr float forced = std::numeric_limits<float>::max();
        const at::Tensor inner = m_base->score(inputs, count);
        const at::Tensor norms = criticalValueNorms(inputs);
        at::Tensor scores = inner.clone();
        scores.scatter_(-1, TopKSelection::largest(inner, safe), forced);
        const at::Tensor top = TopKSelection::largest(scores.reshape({batch, heads * length}), count * heads);
        const at::Tensor budgets = at::zeros({batch, heads}, top.options())
                                       .scatter_add_(-1, at::floor_divide(top, length), at::ones_like(top))
                                       .cpu();
        // kvpress: (head_budgets * first_stage_ratio).to(int64), an int64 tensor times a Python float:
        // float32.
        const at::Tensor firstStage =
            (budgets.to(at::kFloat) * static_cast<float>(m_firstStageRatio)).to(at::kLong);
        action.masked = at::ones({batch, heads, length}, inputs.keys.options().dtype(at::kBool));
        for (int64_t row = 0; row < batch; ++row) {
            for (int64_t head = 0; head < heads; ++head) {
                at::Tensor headScores = scores[row][head];
                headScores.scatter_(
                    -1, TopKSelection::largest(headScores, firstStage[row][head].item<int64_t>()), forced);
            }
        }
        const at::Tensor weighted =
            (scores + m_epsilon) * norms; // forced * norm may overflow to +inf: still first
        for (int64_t row = 0; row < batch; ++row) {
            for (int64_t head = 0; head < heads; ++head) {
                action.masked[row][head].index_fill_(
                    0, TopKSelection::largest(weighted[row][head], budgets[row][head].item<int64_t>()),
                    false);
            }
        }
        action.scores = inner;
        action.details["vwl1norm"] = norms;
        action.details["n_kept"] = at::scalar_tensor(count, at::kLong);
        action.details["n_safe"] = at::scalar_tensor(safe, at::kLong);
        action.details["n_pruned"] = at::scalar_tensor(heads * (length - count), at::kLong);
        action.details["head_budgets"] = budgets;
        action.details["first_stage_budgets"] = firstStage;
        return action;
    }

private:
    std::shared_ptr<const Press> m_base;
    double m_alphaSafeguard;
    double m_epsilon;
    double m_firstStageRatio;
};

} // namespace

KVSCOPE_PRESS_FACTORY(criticaladakv) {
    PressFactory factory;
    factory.generation = [](const kvscope::config::PressSettings& settings) -> std::unique_ptr<CachePress> {
        const auto [options, base] =
            PressCatalog::wrapped(settings.name, settings.options,
                                  "which only eager attention returns and kvpress's CriticalAdaKV refuses; "
                                  "choose another base (knorm, snapkv, ...)");
        return std::make_unique<CriticalAdaKvPress>(
            base, options.real("alpha_safeguard", 0.0, 1.0),
            options.real("epsilon", 0.0, std::numeric_limits<double>::max()),
            options.real("first_stage_ratio", 0.0, 1.0));
    };
    return factory;
}
#endif
