// SPDX-License-Identifier: GPL-3.0-or-later
// AdaKV (kvpress's AdaKVPress): per-head budgets over a base scorer, applied as a mask.
#include "kvscope/config/PressRegistration.h"

KVSCOPE_PRESS_DESCRIPTION(adakv) {
    kvscope::config::PressDescription press;
    press.name = "adakv";
    press.referenceName = "AdaKVPress";
    press.displayName = "AdaKV";
    press.kind = "wrapper";
    press.phase = "prefill";
    press.summary = "per-head budgets over a base scorer: heads mask different numbers of tokens";
    press.options = {kvscope::config::PressOption::base(),
                     {"alpha_safeguard", "float", "0.2", "share of each head's budget it always keeps"}};
    press.sentence =
        "heads share one budget by {base_name}'s scores (each keeps at least {alpha_safeguard} of its "
        "share): {base}";
    press.policy.effect = "masks";
    return press;
}

#if KVSCOPE_PRESS_ENGINE
#include "kvscope/press/AdaKvPress.h"
#include "kvscope/press/PressCatalog.h"
#include "kvscope/press/PressFactory.h"
#include "kvscope/press/TopKSelection.h"

#include <ATen/ATen.h>
#include <limits>
#include <stdexcept>

namespace kvscope::press {

AdaKvPress::AdaKvPress(std::shared_ptr<const Press> base, double alphaSafeguard)
    : m_base(std::move(base)), m_alphaSafeguard(alphaSafeguard) {
    if (!(alphaSafeguard >= 0.0 && alphaSafeguard <= 1.0)) {
        throw std::invalid_argument("alpha_safeguard " + std::to_string(alphaSafeguard) + " is outside [0, 1]");
    }
}

AdaKvMask AdaKvPress::mask(const PressInputs& inputs, double ratio) const {
    const int64_t batch = inputs.keys.size(0);
    const int64_t heads = inputs.keys.size(1);
    const int64_t length = inputs.keys.size(2);
    AdaKvMask result;
    result.keptCount = static_cast<int64_t>(static_cast<double>(length) * (1.0 - ratio));
    result.safeCount = static_cast<int64_t>(static_cast<double>(result.keptCount) * m_alphaSafeguard);
    result.prunedCount = heads * (length - result.keptCount);
    result.masked = at::zeros({batch, heads, length}, inputs.keys.options().dtype(at::kBool));
    if (ratio == 0.0) {
        return result;
    }
    result.scores = m_base->score(inputs, result.keptCount);
    // Each head's best `safeCount` tokens can never be pruned.
    at::Tensor guarded = result.scores.clone();
    guarded.scatter_(-1, TopKSelection::largest(result.scores, result.safeCount),
                     std::numeric_limits<float>::max());
    const at::Tensor pruned = TopKSelection::smallest(guarded.reshape({batch, heads * length}), result.prunedCount);
    result.masked.view({batch, heads * length}).scatter_(-1, pruned, true);
    return result;
}

} // namespace kvscope::press

namespace {

using namespace kvscope::press;

/// After each layer's prefill, masks each head's pruned slots; the cache keeps them all.
class AdaKvCachePress : public CachePress {
public:
    explicit AdaKvCachePress(AdaKvPress press) : m_press(std::move(press)) {}
    PressAction onPass(const PressInputs& inputs, const PressPass& pass) override {
        PressAction action;
        if (pass.index == 0 && pass.ratio > 0.0) {
            const AdaKvMask mask = m_press.mask(inputs, pass.ratio);
            action.masked = mask.masked;
            action.scores = mask.scores;
        }
        return action;
    }

private:
    AdaKvPress m_press;
};

} // namespace

KVSCOPE_PRESS_FACTORY(adakv) {
    PressFactory factory;
    factory.generation = [](const kvscope::config::PressSettings& settings) -> std::unique_ptr<CachePress> {
        // kvpress's AdaKVPress asserts the attention is not eager, the only one that returns weights.
        return std::make_unique<AdaKvCachePress>(PressCatalog::adaKv(
            settings.options, "which only eager attention returns and kvpress's AdaKV refuses; "
                              "choose another base (knorm, snapkv, tova, expected_attention, ...)"));
    };
    return factory;
}
#endif
