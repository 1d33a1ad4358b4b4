// SPDX-License-Identifier: GPL-3.0-or-later
// TOVA (kvpress's TOVAPress): the last query's attention, averaged over every head.
#include "kvscope/config/PressRegistration.h"

KVSCOPE_PRESS_DESCRIPTION(tova) {
    kvscope::config::PressDescription press;
    press.name = "tova";
    press.referenceName = "TOVAPress";
    press.displayName = "TOVA";
    press.kind = "scorer";
    press.phase = "prefill";
    press.summary = "the last query's attention averaged over all heads; the last token is kept";
    press.sentence = "the {dropped} the last query attended to least (averaged over heads) were dropped";
    press.policy.queries = true;
    return press;
}

#if KVSCOPE_PRESS_ENGINE
#include "kvscope/press/PressFactory.h"
#include "kvscope/press/TovaPress.h"

KVSCOPE_PRESS_FACTORY(tova) {
    return kvscope::press::PressFactory::scorerWithRatio<kvscope::press::TovaPress>();
}
#endif
