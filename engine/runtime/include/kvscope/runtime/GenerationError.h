// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <stdexcept>
#include <string>

namespace kvscope::runtime {

/// A generation request that cannot be carried out: the message names the problem and what is allowed.
class GenerationError : public std::runtime_error {
public:
    explicit GenerationError(const std::string& message);
};

} // namespace kvscope::runtime
