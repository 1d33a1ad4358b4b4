// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

namespace kvscope::config {

/// One option of a cache press as the catalogue lists it.
struct PressOption {
    std::string name;
    /// `int`, `float`, `bool` or `press` (the name of a scorer press).
    std::string type;
    std::string defaultValue;
    std::string meaning;
    /// A count that must stay below the prompt's token count at the prefill (SnapKV's window_size, an
    /// n_sink): the inspector fits its default to a shorter prompt (PressDescriptions::fitToPrompt).
    bool belowPrompt = false;
};

} // namespace kvscope::config
