// SPDX-License-Identifier: GPL-3.0-or-later
// CriticalKV (kvpress's CriticalKVPress): a base scorer's scores weighed by how much each value moves the
// layer's output (the L1 norm of o_proj applied to it), after a first stage kept by the base alone.
#include "kvscope/config/PressRegistration.h"

KVSCOPE_PRESS_DESCRIPTION(criticalkv) {
    kvscope::config::PressDescription press;
    press.name = "criticalkv";
    press.referenceName = "CriticalKVPress";
    press.displayName = "CriticalKV";
    press.kind = "wrapper";
    press.phase = "prefill";
    press.summary = "two stages: the base scorer's best first_stage_ratio share, then base scores times the "
                    "L1 norm of o_proj applied to each value";
    press.options = {
        kvscope::config::PressOption::base(),
        {"epsilon", "float", "0.0001", "added to the base scores before the value-output weighting"},
        {"first_stage_ratio", "float", "0.5", "share of the budget the base scores alone keep"}};
    press.sentence =
        "{base_name}'s best share ({first_stage_ratio} of the budget) stayed, then the {dropped} "
        "whose {base_name} scores times the size of their value's contribution to the output "
        "were lowest were dropped";
    press.policy.values = true;
    press.policy.outputProjection = true;
    return press;
}

#if KVSCOPE_PRESS_ENGINE
#include "kvscope/press/PressCatalog.h"
#include "kvscope/press/PressFactory.h"
#include "kvscope/press/TopKSelection.h"

#include <ATen/ATen.h>
#include <limits>

namespace kvscope::press {

/// kvpress's CriticalKVPress.vwl1norm, which CriticalAdaKV (engine/presses/CriticalAdaKv.cpp) reuses as
/// kvpress's does: per query head h, the L1 norm over the hidden size of v_t @ o_proj[:, h D:(h+1) D]^T,
/// averaged over each KV head's query heads -> [B, Hkv, T].
at::Tensor criticalValueNorms(const PressInputs& inputs) {
    if (!inputs.outputWeight.defined()) {
        throw std::invalid_argument("CriticalKV reads the layer's o_proj weight, which was not given");
    }
    const int64_t heads = inputs.numHeads;
    const int64_t groups = heads / inputs.numKeyValueHeads;
    // A checkpoint's o_proj may be stored in bf16/f16; the norms are computed in the values' type.
    const at::Tensor output = inputs.outputWeight.to(inputs.values.scalar_type())
                                  .transpose(0, 1)
                                  .reshape({heads, inputs.headDim, -1});
    const at::Tensor values = groups > 1 ? inputs.values.repeat_interleave(groups, 1) : inputs.values;
    const at::Tensor norms = at::matmul(values, output.unsqueeze(0)).abs().sum(-1); // [B, H, T]
    return norms.view({values.size(0), inputs.numKeyValueHeads, groups, values.size(2)}).mean(2);
}

} // namespace kvscope::press

namespace {

using namespace kvscope::press;

/// After each layer's prefill: scores (s + epsilon) * vwl1norm, the base's top int((1 - r) T f) set to the
/// float32 maximum, then the usual top int(T (1 - r)).
class CriticalKvPress : public CachePress {
public:
    CriticalKvPress(std::shared_ptr<const Press> base, double epsilon, double firstStageRatio)
        : m_base(std::move(base)), m_epsilon(epsilon), m_firstStageRatio(firstStageRatio) {}
    PressAction onPass(const PressInputs& inputs, const PressPass& pass) override {
        PressAction action;
        if (pass.index != 0 || pass.ratio <= 0.0) {
            return action;
        }
        const int64_t length = inputs.keys.size(2);
        const int64_t count = static_cast<int64_t>(static_cast<double>(length) * (1.0 - pass.ratio));
        const at::Tensor inner = m_base->score(inputs, count);
        // kvpress's order of operations: (1 - ratio) * k_len * first_stage_ratio, in double.
        const auto budget =
            static_cast<int64_t>((1.0 - pass.ratio) * static_cast<double>(length) * m_firstStageRatio);
        const at::Tensor norms = criticalValueNorms(inputs);
        at::Tensor scores = (inner + m_epsilon) * norms;
        scores.scatter_(-1, TopKSelection::largest(inner, budget), std::numeric_limits<float>::max());
        action.scores = scores;
        action.kept = TopKSelection::largest(scores, count);
        action.details["inner_scores"] = inner;
        action.details["vwl1norm"] = norms;
        action.details["first_stage_budget"] = at::scalar_tensor(budget, at::kLong);
        return action;
    }

private:
    std::shared_ptr<const Press> m_base;
    double m_epsilon;
    double m_firstStageRatio;
};

} // namespace

KVSCOPE_PRESS_FACTORY(criticalkv) {
    PressFactory factory;
    factory.generation = [](const kvscope::config::PressSettings& settings) -> std::unique_ptr<CachePress> {
        const auto [options, base] = PressCatalog::wrapped(settings.name, settings.options);
        return std::make_unique<CriticalKvPress>(
            base, options.real("epsilon", 0.0, std::numeric_limits<double>::max()),
            options.real("first_stage_ratio", 0.0, 1.0));
    };
    return factory;
}
#endif
