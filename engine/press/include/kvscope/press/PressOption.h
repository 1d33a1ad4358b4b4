// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

namespace kvscope::press {

/// One option of a press as the catalogue lists it.
struct PressOption {
    std::string name;
    /// `int`, `float`, `bool` or `press` (the name of a scorer press).
    std::string type;
    std::string defaultValue;
    std::string meaning;
};

} // namespace kvscope::press
