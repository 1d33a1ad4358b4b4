// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace kvscope::tokenizer {

/// Transparent string hash: vocabularies are looked up by string_view slices of the input without
/// building a std::string per lookup.
struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    std::size_t operator()(const std::string& s) const { return std::hash<std::string_view>{}(s); }
};

} // namespace kvscope::tokenizer
