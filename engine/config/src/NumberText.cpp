// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/config/NumberText.h"

#include <charconv>
#include <cmath>
#include <sstream>
#include <system_error>

namespace kvscope::config {

std::optional<long long> NumberText::wholeNumber(std::string_view text) {
    long long value = 0;
    const char* end = text.data() + text.size();
    const auto [stop, error] = std::from_chars(text.data(), end, value);
    if (text.empty() || error != std::errc() || stop != end) {
        return std::nullopt;
    }
    return value;
}

std::optional<double> NumberText::number(std::string_view text) {
    double value = 0.0;
    const char* end = text.data() + text.size();
    const auto [stop, error] = std::from_chars(text.data(), end, value);
    if (text.empty() || error != std::errc() || stop != end || !std::isfinite(value)) {
        return std::nullopt;
    }
    return value;
}

std::string NumberText::shown(double value) {
    std::ostringstream out;
    out << value;
    return out.str();
}

} // namespace kvscope::config
