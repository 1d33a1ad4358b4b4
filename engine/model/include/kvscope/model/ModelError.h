// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <stdexcept>
#include <string>

namespace kvscope::model {

/// A model, checkpoint or input that cannot be used: the message names the problem and what is allowed.
class ModelError : public std::runtime_error {
public:
    explicit ModelError(const std::string& message);
};

} // namespace kvscope::model
