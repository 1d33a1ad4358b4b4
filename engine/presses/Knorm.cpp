// SPDX-License-Identifier: GPL-3.0-or-later
// Knorm (kvpress's KnormPress): keys of small norm draw the most attention.
#include "kvscope/config/PressRegistration.h"

KVSCOPE_PRESS_DESCRIPTION(knorm) {
    kvscope::config::PressDescription press;
    press.name = "knorm";
    press.referenceName = "KnormPress";
    press.displayName = "Knorm";
    press.kind = "scorer";
    press.phase = "prefill";
    press.summary = "keeps the keys of smallest L2 norm";
    press.sentence = "the {dropped} whose keys had the largest norm were dropped";
    return press;
}

#if KVSCOPE_PRESS_ENGINE
#include "kvscope/press/KnormPress.h"
#include "kvscope/press/PressFactory.h"

KVSCOPE_PRESS_FACTORY(knorm) {
    return kvscope::press::PressFactory::scorerWithRatio<kvscope::press::KnormPress>();
}
#endif
