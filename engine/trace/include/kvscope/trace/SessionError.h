// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <stdexcept>
#include <string>

namespace kvscope::trace {

/// A session file that cannot be opened, written or understood; the message names the file, the
/// byte offset where it applies, and what was expected.
class SessionError : public std::runtime_error {
public:
    explicit SessionError(const std::string& message) : std::runtime_error(message) {}
};

} // namespace kvscope::trace
