// SPDX-License-Identifier: GPL-3.0-or-later
// CUR (kvpress's CURPress): approximate leverage from squared key and value norms.
#include "kvscope/config/PressRegistration.h"

KVSCOPE_PRESS_DESCRIPTION(cur) {
    kvscope::config::PressDescription press;
    press.name = "cur";
    press.referenceName = "CURPress";
    press.displayName = "CUR";
    press.kind = "scorer";
    press.phase = "prefill";
    press.summary = "approximate leverage from squared key/value norms; the first num_sinks kept";
    press.options = {
        {"num_sinks", "int", "4", "first tokens always kept"},
        {"leverage_type", "text", "kv_product", "key, value, kv_avg or kv_product"},
        {"use_random_leverage", "bool", "false", "project keys and values on 20 random directions first"},
        {"use_local_approximation", "bool", "true", "normalise within windows of local_window_size tokens"},
        {"local_window_size", "int", "16", "tokens per local window"},
        {"seed", "int", "0", "seed of the random projection (kvpress draws it from torch's global RNG)"}};
    press.sentence =
        "the first {num_sinks} stay; the {dropped} with the lowest {leverage_type} leverage (squared norms) were dropped";
    press.policy.values = true;
    return press;
}

#if KVSCOPE_PRESS_ENGINE
#include "kvscope/press/CurPress.h"
#include "kvscope/press/PressFactory.h"

KVSCOPE_PRESS_FACTORY(cur) {
    kvscope::press::PressFactory factory;
    factory.scorer = [](const kvscope::press::PressOptions& options) {
        return std::make_shared<kvscope::press::CurPress>(
            options.integer("num_sinks", 0), options.text("leverage_type"), options.flag("use_random_leverage"),
            options.flag("use_local_approximation"), options.integer("local_window_size", 1),
            static_cast<uint64_t>(options.integer("seed", 0)));
    };
    return factory;
}
#endif
