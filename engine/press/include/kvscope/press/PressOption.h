// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/config/PressOption.h"

namespace kvscope::press {

/// The catalogue's option record lives in kvscope_config, which lists the presses without LibTorch.
using PressOption = config::PressOption;

} // namespace kvscope::press
