// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <stdexcept>
#include <string>

namespace kvscope::config {

/// A model configuration that cannot be read or used: the message names the field and what is allowed.
class ConfigError : public std::runtime_error {
public:
    explicit ConfigError(const std::string& message);
};

} // namespace kvscope::config
