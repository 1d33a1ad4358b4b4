// SPDX-License-Identifier: GPL-3.0-or-later
// KeyRerotation (kvpress's KeyRerotationPress): evicts by a base scorer, then re-rotates the kept keys so
// that they sit at positions 0..n-1.
#include "kvscope/config/PressRegistration.h"

KVSCOPE_PRESS_DESCRIPTION(key_rerotation) {
    kvscope::config::PressDescription press;
    press.name = "key_rerotation";
    press.referenceName = "KeyRerotationPress";
    press.displayName = "KeyRerotation";
    press.kind = "value-changing";
    press.phase = "prefill";
    press.summary = "a base scorer's eviction, then the kept keys re-rotated to consecutive positions 0..n-1";
    press.options = {kvscope::config::PressOption::base()};
    press.sentence =
        "by {base_name}'s scores: {base}; the kept keys were re-rotated to positions 0 to n-1 in "
        "position order, so the model sees no gap where tokens were dropped";
    press.policy.effect = "evicts, rewrites keys";
    return press;
}

#if KVSCOPE_PRESS_ENGINE
#include "kvscope/config/PressDescriptions.h"
#include "kvscope/model/TensorOps.h"
#include "kvscope/press/PressCatalog.h"
#include "kvscope/press/PressFactory.h"
#include "kvscope/press/TopKSelection.h"

#include <ATen/ATen.h>

namespace {

using namespace kvscope::press;

/// After each layer's prefill: the base press's kept tokens in position order, each key rotated by the
/// distance from its old position p_j to its new one j (RoPE composes: rope(rope(k, p), j - p) = rope(k, j)).
class KeyRerotationPress : public CachePress {
public:
    explicit KeyRerotationPress(std::shared_ptr<const Press> base) : m_base(std::move(base)) {}
    bool wantsAttentionWeights(int64_t, int64_t passIndex) const override {
        return passIndex == 0 && m_base->reads().attentions;
    }
    PressAction onPass(const PressInputs& inputs, const PressPass& pass) override {
        PressAction action;
        if (pass.index != 0 || pass.ratio <= 0.0) {
            return action;
        }
        const int64_t length = inputs.keys.size(2);
        const int64_t kept = static_cast<int64_t>(static_cast<double>(length) * (1.0 - pass.ratio));
        action.scores = m_base->score(inputs, kept);
        action.kept = std::get<0>(at::sort(TopKSelection::largest(action.scores, kept), -1));
        // kvpress: delta = j - index in float32, angles delta * inv_freq in float32, emb = [a, a].
        const at::Tensor inverse =
            inputs.inverseFrequencies.defined()
                ? inputs.inverseFrequencies.to(inputs.keys.device(), at::kFloat)
                : kvscope::model::ops::inverseFrequencies(inputs.headDim, inputs.ropeTheta, std::nullopt,
                                                          inputs.keys.device())
                      .to(at::kFloat);
        const at::Tensor shift = at::arange(kept, action.kept.options()) - action.kept; // [B, Hkv, n]
        const at::Tensor delta = shift.to(at::kFloat);           // exact: positions are far below 2^24
        const at::Tensor angles = delta.unsqueeze(-1) * inverse; // [B, Hkv, n, D/2]
        const at::Tensor emb = at::cat({angles, angles}, -1);
        const at::Tensor keys = TopKSelection::gather(inputs.keys, action.kept);
        // A partial rotary dimension (rotary_emb over the leading channels) leaves the rest as it is.
        action.keys = kvscope::model::ops::applyRotary(keys, emb.cos().to(keys.scalar_type()),
                                                       emb.sin().to(keys.scalar_type()));
        // The event's rotaryPositions (format 1.7): where each kept key's rotation now points.
        action.rotationShift = shift;
        return action;
    }

private:
    std::shared_ptr<const Press> m_base;
};

} // namespace

KVSCOPE_PRESS_FACTORY(key_rerotation) {
    PressFactory factory;
    factory.generation = [](const kvscope::config::PressSettings& settings) -> std::unique_ptr<CachePress> {
        return std::make_unique<KeyRerotationPress>(PressCatalog::base(settings.name, settings.options));
    };
    return factory;
}
#endif
