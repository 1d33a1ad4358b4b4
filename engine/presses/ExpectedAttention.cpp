// SPDX-License-Identifier: GPL-3.0-or-later
// ExpectedAttention (kvpress's ExpectedAttentionPress): attention expected from future queries.
#include "kvscope/config/PressRegistration.h"

KVSCOPE_PRESS_DESCRIPTION(expected_attention) {
    kvscope::config::PressDescription press;
    press.name = "expected_attention";
    press.referenceName = "ExpectedAttentionPress";
    press.displayName = "Expected attention";
    press.kind = "scorer";
    press.phase = "prefill";
    press.summary = "the attention expected from future queries (Gaussian queries, average RoPE)";
    press.options = {
        {"n_future_positions", "int", "512", "future positions the query statistics are rotated to"},
        {"n_sink", "int", "4", "first tokens always kept and left out of the statistics",
         /*belowPrompt=*/true},
        {"use_covariance", "bool", "true", "add the query covariance term to the expected logits"},
        {"use_vnorm", "bool", "true", "weigh scores by the value norms"},
        {"epsilon", "float", "0", "added to the scores before the value-norm weighting"}};
    press.sentence =
        "the {dropped} with the lowest attention expected from the next {n_future_positions} queries were "
        "dropped";
    press.policy.values = true;
    press.policy.queries = true;
    return press;
}

#if KVSCOPE_PRESS_ENGINE
#include "kvscope/press/ExpectedAttentionPress.h"
#include "kvscope/press/PressFactory.h"

#include <limits>

KVSCOPE_PRESS_FACTORY(expected_attention) {
    kvscope::press::PressFactory factory;
    factory.scorer = [](const kvscope::press::PressOptions& options) {
        return std::make_shared<kvscope::press::ExpectedAttentionPress>(
            options.integer("n_future_positions", 1), options.integer("n_sink", 0),
            options.flag("use_covariance"), options.flag("use_vnorm"),
            options.real("epsilon", 0.0, std::numeric_limits<double>::max()));
    };
    return factory;
}
#endif
