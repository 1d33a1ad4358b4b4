// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/config/ConfigError.h"

namespace kvscope::config {

ConfigError::ConfigError(const std::string& message) : std::runtime_error(message) {}

} // namespace kvscope::config
