// SPDX-License-Identifier: GPL-3.0-or-later
// PyramidKV (kvpress's PyramidKVPress): SnapKV's scores, a budget shrinking with depth.
#include "kvscope/config/PressRegistration.h"

KVSCOPE_PRESS_DESCRIPTION(pyramidkv) {
    kvscope::config::PressDescription press;
    press.name = "pyramidkv";
    press.referenceName = "PyramidKVPress";
    press.displayName = "PyramidKV";
    press.kind = "scorer";
    press.phase = "prefill";
    press.summary = "SnapKV scores with a per-layer budget shrinking towards the last layer";
    press.options = {kvscope::config::PressOption::window(),
                     kvscope::config::PressOption::kernel(),
                     {"beta", "float", "20", "ratio of the first layer's budget to the last's"}};
    press.sentence =
        "with a budget that shrinks towards the last layer (beta {beta}), the {dropped} whose attention "
        "from the last {window_size} queries was lowest were dropped";
    press.policy.queries = true;
    return press;
}

#if KVSCOPE_PRESS_ENGINE
#include "kvscope/press/PressFactory.h"
#include "kvscope/press/PyramidKvPress.h"

#include <limits>

KVSCOPE_PRESS_FACTORY(pyramidkv) {
    kvscope::press::PressFactory factory;
    factory.scorer = [](const kvscope::press::PressOptions& options) {
        return std::make_shared<kvscope::press::PyramidKvPress>(
            options.integer("window_size", 1), options.integer("kernel_size", 1),
            options.real("beta", 1e-9, std::numeric_limits<double>::max()));
    };
    return factory;
}
#endif
