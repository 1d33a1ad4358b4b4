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
};

} // namespace kvscope::config
