// SPDX-License-Identifier: GPL-3.0-or-later
// Random (kvpress's RandomPress): a baseline of seeded random scores.
#include "kvscope/config/PressRegistration.h"

KVSCOPE_PRESS_DESCRIPTION(random) {
    kvscope::config::PressDescription press;
    press.name = "random";
    press.referenceName = "RandomPress";
    press.displayName = "Random";
    press.kind = "scorer";
    press.phase = "prefill";
    press.summary = "random scores (torch.rand of a seeded CPU generator)";
    press.options = {{"seed", "int", "0", "generator seed"}};
    press.sentence = "{dropped} chosen at random (seed {seed}) were dropped";
    return press;
}

#if KVSCOPE_PRESS_ENGINE
#include "kvscope/press/PressFactory.h"
#include "kvscope/press/RandomPress.h"

KVSCOPE_PRESS_FACTORY(random) {
    kvscope::press::PressFactory factory;
    factory.scorer = [](const kvscope::press::PressOptions& options) {
        return std::make_shared<kvscope::press::RandomPress>(
            static_cast<uint64_t>(options.integer("seed", 0)));
    };
    return factory;
}
#endif
