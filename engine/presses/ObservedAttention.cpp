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
#include "kvscope/press/ObservedAttentionPress.h"
#include "kvscope/press/PressFactory.h"

KVSCOPE_PRESS_FACTORY(observed_attention) {
    return kvscope::press::PressFactory::scorerWithRatio<kvscope::press::ObservedAttentionPress>();
}
#endif
