// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace kvscope::config {

/// Numbers as a command line spells them: the whole text must be the number (no trailing junk, no
/// infinities), so that every front end accepts and refuses the same words.
class NumberText {
public:
    /// A whole number ("12", "-3"); nullopt for anything else ("1.5", "12x", "", out of range).
    static std::optional<long long> wholeNumber(std::string_view text);
    /// A finite number ("0.5", "2", "1e-3"); nullopt for anything else.
    static std::optional<double> number(std::string_view text);
    /// `value` as messages show it ("0.5", "1").
    static std::string shown(double value);
};

} // namespace kvscope::config
