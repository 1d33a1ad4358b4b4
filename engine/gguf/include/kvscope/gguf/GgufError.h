// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <stdexcept>
#include <string>

namespace kvscope::gguf {

/// A GGUF file, tensor or metadata value that cannot be used: the message names the file, the problem and
/// what is allowed.
class GgufError : public std::runtime_error {
public:
    explicit GgufError(const std::string& message) : std::runtime_error(message) {}
};

} // namespace kvscope::gguf
