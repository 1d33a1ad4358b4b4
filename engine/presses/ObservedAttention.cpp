// SPDX-License-Identifier: GPL-3.0-or-later
// ObservedAttention (kvpress's ObservedAttentionPress): the attention each key received in the prefill.
#include "kvscope/config/PressRegistration.h"

KVSCOPE_PRESS_DESCRIPTION(observed_attention) {
    kvscope::config::PressDescription press;
    press.name = "observed_attention";
    press.referenceName = "ObservedAttentionPress";
    press.displayName = "Observed attention";
    press.kind = "scorer";
    press.phase = "prefill";
    press.summary = "the attention each key received during prefill (needs attention weights)";
    press.sentence = "the {dropped} that received the least attention during the prefill were dropped";
    press.policy.attentions = true;
    return press;
}

#if KVSCOPE_PRESS_ENGINE
#include "kvscope/press/PressFactory.h"

#include <ATen/ATen.h>

namespace kvscope::press {
namespace {

/// ObservedAttention: the attention each key received, averaged over the queries that see it.
class ObservedAttentionPress : public Press {
public:
    std::string name() const override { return "observed_attention"; }
    std::string referenceName() const override { return "ObservedAttentionPress"; }
    PressReads reads() const override { return {false, false, true}; }
    at::Tensor score(const PressInputs& inputs, int64_t keptCount) const override;
};

at::Tensor ObservedAttentionPress::score(const PressInputs& inputs, int64_t) const {
    require(inputs.attentionReceived.defined() ? inputs.attentionReceived : inputs.attentions, "attention weights",
            name());
    const at::Tensor received = inputs.receivedAttention();
    const int64_t length = received.size(-1);
    // Key j is seen by the T - j queries at or after it.
    const at::Tensor seen = at::arange(length, 0, -1, received.options());
    return groupMean(received / seen, inputs.numKeyValueHeads);
}

} // namespace
} // namespace kvscope::press

KVSCOPE_PRESS_FACTORY(observed_attention) {
    return kvscope::press::PressFactory::scorerWithRatio<kvscope::press::ObservedAttentionPress>();
}
#endif
