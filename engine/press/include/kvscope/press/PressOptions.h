// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/config/PressOptions.h"

namespace kvscope::press {

/// The option parser lives in kvscope_config, where run settings are checked without LibTorch.
using PressOptions = config::PressOptions;

} // namespace kvscope::press
