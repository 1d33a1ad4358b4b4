// SPDX-License-Identifier: GPL-3.0-or-later
// SnapKV (kvpress's SnapKVPress): the attention of the last window of queries, pooled.
#include "kvscope/config/PressRegistration.h"

KVSCOPE_PRESS_DESCRIPTION(snapkv) {
    kvscope::config::PressDescription press;
    press.name = "snapkv";
    press.referenceName = "SnapKVPress";
    press.displayName = "SnapKV";
    press.kind = "scorer";
    press.phase = "prefill";
    press.summary = "attention of the last window_size queries, pooled; the window is kept";
    press.options = {kvscope::config::PressOption::window(), kvscope::config::PressOption::kernel()};
    press.sentence =
        "the {dropped} whose attention from the last {window_size} queries was lowest were dropped";
    press.policy.queries = true;
    return press;
}

#if KVSCOPE_PRESS_ENGINE
#include "kvscope/press/PressFactory.h"
#include "kvscope/press/SnapKvPress.h"

KVSCOPE_PRESS_FACTORY(snapkv) {
    kvscope::press::PressFactory factory;
    factory.scorer = [](const kvscope::press::PressOptions& options) {
        return std::make_shared<kvscope::press::SnapKvPress>(options.integer("window_size", 1),
                                                             options.integer("kernel_size", 1));
    };
    return factory;
}
#endif
