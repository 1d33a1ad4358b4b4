// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <stdexcept>
#include <string>

namespace kvscope::training {

/// Bad training input (an unreadable or too small corpus, a model that cannot be trained here).
class TrainingError : public std::runtime_error {
public:
    explicit TrainingError(const std::string& message);
};

} // namespace kvscope::training
