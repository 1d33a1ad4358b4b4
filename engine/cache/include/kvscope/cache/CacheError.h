// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <stdexcept>
#include <string>

namespace kvscope::cache {

/// The Python exception class the reference raises in the same situation; kept so that conformance
/// checks and users can tell the kinds of refusal apart.
enum class ErrorKind { Value, Index, Type, Runtime, Attribute };

/// A refused cache operation: the message names the bad value and what is allowed. The object that
/// refused stays usable; nothing was changed.
class CacheError : public std::runtime_error {
public:
    CacheError(ErrorKind kind, const std::string& message);

    ErrorKind kind() const { return m_kind; }
    /// The reference's exception name for this kind, e.g. "ValueError".
    const char* kindName() const;

private:
    ErrorKind m_kind;
};

} // namespace kvscope::cache
