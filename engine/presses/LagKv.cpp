// SPDX-License-Identifier: GPL-3.0-or-later
// LagKV (kvpress's LagKVPress): each partition scored against the next one's range.
#include "kvscope/config/PressRegistration.h"

KVSCOPE_PRESS_DESCRIPTION(lagkv) {
    kvscope::config::PressDescription press;
    press.name = "lagkv";
    press.referenceName = "LagKVPress";
    press.displayName = "LagKV";
    press.kind = "scorer";
    press.phase = "prefill";
    press.summary =
        "scores each lag_size partition against the next one's min-max range; sinks and the last partition kept";
    press.options = {{"n_sink", "int", "4", "first tokens always kept", /*belowPrompt=*/true},
                     {"lag_size", "int", "128", "tokens per partition; the next partition is the reference"},
                     {"cross_scoring", "bool", "false",
                      "rank by the raw lag scores instead of the rank inside each partition"}};
    press.sentence = "the first {n_sink} and the last partition stay; the {dropped} that varied least against "
                     "the next {lag_size}-token partition were dropped";
    press.policy.values = true;
    return press;
}

#if KVSCOPE_PRESS_ENGINE
#include "kvscope/press/LagKvPress.h"
#include "kvscope/press/PressFactory.h"

KVSCOPE_PRESS_FACTORY(lagkv) {
    kvscope::press::PressFactory factory;
    factory.scorer = [](const kvscope::press::PressOptions& options) {
        return std::make_shared<kvscope::press::LagKvPress>(
            options.integer("n_sink", 0), options.integer("lag_size", 1), options.flag("cross_scoring"));
    };
    return factory;
}
#endif
