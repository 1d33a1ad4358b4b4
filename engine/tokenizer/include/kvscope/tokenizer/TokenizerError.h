// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <stdexcept>
#include <string>

namespace kvscope::tokenizer {

/// A tokenizer that cannot be loaded or used: bad JSON, a missing file, or a component kvscope does
/// not support. Refusals happen at load time and name the component and the values it allows, so
/// that a checkpoint never encodes differently from its reference without saying so.
class TokenizerError : public std::runtime_error {
public:
    explicit TokenizerError(const std::string& message) : std::runtime_error(message) {}
};

} // namespace kvscope::tokenizer
