// SPDX-License-Identifier: GPL-3.0-or-later
// CAP (kvpress's CapPress): ridge leverage of the values, weighted by alignment with future queries.
#include "kvscope/config/PressRegistration.h"

KVSCOPE_PRESS_DESCRIPTION(cap) {
    kvscope::config::PressDescription press;
    press.name = "cap";
    press.referenceName = "CapPress";
    press.displayName = "CAP";
    press.kind = "scorer";
    press.phase = "prefill";
    press.summary = "ridge leverage of each value among values weighted by key alignment with future queries";
    press.options = {{"tau", "float", "5", "sharpness of the key-alignment weights"},
                     {"n_future_positions", "int", "512", "future positions the average query is rotated to"},
                     {"n_sink", "int", "4", "first tokens always kept", /*belowPrompt=*/true},
                     {"epsilon", "float", "0.000001", "added to each weight in the capacity matrix"}};
    press.sentence = "the first {n_sink} stay; the {dropped} whose values added the least capacity for the next "
                     "{n_future_positions} queries were dropped";
    press.policy.values = true;
    press.policy.queries = true;
    return press;
}

#if KVSCOPE_PRESS_ENGINE
#include "kvscope/press/CapPress.h"
#include "kvscope/press/PressFactory.h"

#include <limits>

KVSCOPE_PRESS_FACTORY(cap) {
    kvscope::press::PressFactory factory;
    factory.scorer = [](const kvscope::press::PressOptions& options) {
        constexpr double unbounded = std::numeric_limits<double>::max();
        return std::make_shared<kvscope::press::CapPress>(options.real("tau", 0.0, unbounded),
                                                          options.integer("n_future_positions", 1),
                                                          options.integer("n_sink", 0),
                                                          options.real("epsilon", 0.0, unbounded));
    };
    return factory;
}
#endif
