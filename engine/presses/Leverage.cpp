// SPDX-License-Identifier: GPL-3.0-or-later
// LeverageScore (kvpress's LeverageScorePress): statistical leverage of the pre-RoPE keys.
#include "kvscope/config/PressRegistration.h"

KVSCOPE_PRESS_DESCRIPTION(leverage) {
    kvscope::config::PressDescription press;
    press.name = "leverage";
    press.referenceName = "LeverageScorePress";
    press.displayName = "LeverageScore";
    press.kind = "scorer";
    press.phase = "prefill";
    press.summary = "statistical leverage of each pre-RoPE key under a random sketch (z-normalised)";
    press.options = {{"sketch_dimension", "int", "48", "columns of the random Gaussian sketch"},
                     {"seed", "int", "0", "seed of the sketch (kvpress draws it from torch's global RNG)"}};
    press.sentence = "the {dropped} whose pre-RoPE keys had the lowest leverage (random sketch of "
                     "{sketch_dimension} columns, seed {seed}) were dropped";
    press.policy.queries = true; // the hidden states
    press.policy.keyProjection = true;
    return press;
}

#if KVSCOPE_PRESS_ENGINE
#include "kvscope/press/LeverageScorePress.h"
#include "kvscope/press/PressFactory.h"

KVSCOPE_PRESS_FACTORY(leverage) {
    kvscope::press::PressFactory factory;
    factory.scorer = [](const kvscope::press::PressOptions& options) {
        return std::make_shared<kvscope::press::LeverageScorePress>(
            options.integer("sketch_dimension", 1), static_cast<uint64_t>(options.integer("seed", 0)));
    };
    return factory;
}
#endif
