// SPDX-License-Identifier: GPL-3.0-or-later
// NonCausalAttn (kvpress's NonCausalAttnPress): unmasked attention within chunks of the prompt.
#include "kvscope/config/PressRegistration.h"

KVSCOPE_PRESS_DESCRIPTION(non_causal_attention) {
    kvscope::config::PressDescription press;
    press.name = "non_causal_attention";
    press.referenceName = "NonCausalAttnPress";
    press.displayName = "NonCausalAttn";
    press.kind = "scorer";
    press.phase = "prefill";
    press.summary = "attention each token receives from its chunk's queries, unmasked, times its value norm";
    press.options = {{"chunk_size", "int", "256", "tokens per chunk of non-causal attention"}};
    press.sentence = "the {dropped} that received the least attention from every query of their "
                     "{chunk_size}-token chunk, weighted by value norm, were dropped";
    press.policy.values = true;
    press.policy.queries = true;
    return press;
}

#if KVSCOPE_PRESS_ENGINE
#include "kvscope/press/NonCausalAttentionPress.h"
#include "kvscope/press/PressFactory.h"

KVSCOPE_PRESS_FACTORY(non_causal_attention) {
    kvscope::press::PressFactory factory;
    factory.scorer = [](const kvscope::press::PressOptions& options) {
        return std::make_shared<kvscope::press::NonCausalAttentionPress>(options.integer("chunk_size", 1));
    };
    return factory;
}
#endif
