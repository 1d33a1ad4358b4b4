// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/config/PressOption.h"

#include <string>
#include <vector>

namespace kvscope::config {

/// One cache press the engine offers: its name, when it acts, what it does and its options.
struct PressDescription {
    std::string name;
    /// `prefill` (scorer and AdaKV presses) or `decoding`.
    std::string phase;
    std::string summary;
    std::vector<PressOption> options;
};

} // namespace kvscope::config
