// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/attach/PrometheusText.h"

#include <charconv>
#include <cmath>
#include <string>

namespace kvscope::attach {

namespace {

/// The sample's value: the first field after the name and its labels ("name{a="b"} 1.0 [timestamp]").
std::optional<double> sampleValue(std::string_view rest) {
    if (!rest.empty() && rest.front() == '{') {
        // Labels: quoted values may hold '}' and escaped quotes.
        bool quoted = false;
        std::size_t i = 1;
        for (; i < rest.size(); ++i) {
            const char c = rest[i];
            if (quoted && c == '\\') {
                ++i;
            } else if (c == '"') {
                quoted = !quoted;
            } else if (!quoted && c == '}') {
                break;
            }
        }
        if (i >= rest.size()) {
            return std::nullopt;
        }
        rest.remove_prefix(i + 1);
    }
    if (rest.empty() || (rest.front() != ' ' && rest.front() != '\t')) {
        return std::nullopt; // another metric whose name starts with this one
    }
    while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) {
        rest.remove_prefix(1);
    }
    const std::size_t end = rest.find_first_of(" \t\r");
    const std::string text(rest.substr(0, end));
    double value = 0;
    const auto [last, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || last != text.data() + text.size() || !std::isfinite(value)) {
        return std::nullopt;
    }
    return value;
}

} // namespace

std::optional<double> PrometheusText::counter(std::string_view page, std::string_view name) {
    if (page.size() > kMaxBytes || name.empty()) {
        return std::nullopt;
    }
    std::optional<double> sum;
    while (!page.empty()) {
        const std::size_t newline = page.find('\n');
        std::string_view line = page.substr(0, newline);
        page.remove_prefix(newline == std::string_view::npos ? page.size() : newline + 1);
        if (line.starts_with(name)) {
            if (const std::optional<double> value = sampleValue(line.substr(name.size()))) {
                sum = sum.value_or(0) + *value;
            }
        }
    }
    return sum;
}

} // namespace kvscope::attach
