// SPDX-License-Identifier: GPL-3.0-or-later
// KeyDiff (kvpress's KeyDiffPress): keys unlike the head's average direction are the informative ones.
#include "kvscope/config/PressRegistration.h"

KVSCOPE_PRESS_DESCRIPTION(keydiff) {
    kvscope::config::PressDescription press;
    press.name = "keydiff";
    press.referenceName = "KeyDiffPress";
    press.displayName = "KeyDiff";
    press.kind = "scorer";
    press.phase = "prefill";
    press.summary = "keeps the keys least like the head's average key direction (-cosine)";
    press.sentence = "the {dropped} whose keys pointed most like the head's average key were dropped";
    return press;
}

#if KVSCOPE_PRESS_ENGINE
#include "kvscope/press/KeyDiffPress.h"
#include "kvscope/press/PressFactory.h"

KVSCOPE_PRESS_FACTORY(keydiff) {
    return kvscope::press::PressFactory::scorerWithRatio<kvscope::press::KeyDiffPress>();
}
#endif
