// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kvscope::tokenizer {

/// A compiled Oniguruma regex (UTF-8, Oniguruma syntax): the engine Hugging Face's Rust tokenizers
/// compile tokenizer.json patterns with, so Unicode properties and lookarounds mean the same here.
/// Searching is const and thread-safe (each search owns its match region).
class OnigRegex {
public:
    /// Compiles pattern; throws TokenizerError naming `component` and Oniguruma's message if it fails.
    OnigRegex(std::string_view pattern, std::string_view component);
    ~OnigRegex();
    OnigRegex(const OnigRegex&) = delete;
    OnigRegex& operator=(const OnigRegex&) = delete;

    /// Non-overlapping matches left to right as [begin, end) byte ranges, as the onig crate's
    /// find_iter yields them (an empty match right after the previous match is skipped).
    void findAll(std::string_view text, std::vector<std::pair<std::size_t, std::size_t>>& matches) const;

    const std::string& pattern() const { return m_pattern; }

private:
    std::string m_pattern;
    void* m_regex = nullptr; // regex_t*, kept opaque so oniguruma.h stays private to one file
};

} // namespace kvscope::tokenizer
