// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

namespace kvscope::config {

/// One option of a cache press as the catalogue lists it.
struct PressOption {
    std::string name;
    /// `int`, `float`, `bool`, `text`, `press` (the name of a scorer press: a wrapper's `base`, its options
    /// given as they are or as `base.NAME`) or `stage` (a prefill press a wrapper runs, its options given as
    /// `OPTION.NAME`: PrefillDecoding's `prefill.window_size`).
    std::string type;
    std::string defaultValue;
    std::string meaning;
    /// A count that must stay below the prompt's token count at the prefill (SnapKV's window_size, an
    /// n_sink): the inspector fits its default to a shorter prompt (PressDescriptions::fitToPrompt).
    bool belowPrompt = false;

    /// Options several presses share, spelt once.
    static PressOption window() {
        return {"window_size", "int", "64", "recent queries whose attention scores the cache; kept", true};
    }
    static PressOption sink() {
        return {"n_sink", "int", "4", "attention-sink slots always kept at the start of the cache", true};
    }
    static PressOption kernel() {
        return {"kernel_size", "int", "5", "width of the average pooling along the sequence"};
    }
    static PressOption base(const std::string& meaning = "the scorer press that ranks the tokens") {
        return {"base", "press", "knorm", meaning};
    }
};

} // namespace kvscope::config
