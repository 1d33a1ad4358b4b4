// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/CacheError.h"

namespace kvscope::cache {

CacheError::CacheError(ErrorKind kind, const std::string& message) : std::runtime_error(message), m_kind(kind) {}

const char* CacheError::kindName() const {
    switch (m_kind) {
    case ErrorKind::Value:
        return "ValueError";
    case ErrorKind::Index:
        return "IndexError";
    case ErrorKind::Type:
        return "TypeError";
    case ErrorKind::Runtime:
        return "RuntimeError";
    case ErrorKind::Attribute:
        return "AttributeError";
    }
    return "Error";
}

} // namespace kvscope::cache
