// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cli/OptionChecks.h"

#include <charconv>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace kvscope::cli {
namespace {

std::optional<double> numberIn(const std::string& text) {
    double value = 0.0;
    const char* end = text.data() + text.size();
    const auto [stop, error] = std::from_chars(text.data(), end, value);
    if (error != std::errc() || stop != end || !std::isfinite(value)) {
        return std::nullopt;
    }
    return value;
}

std::string shown(double value) {
    std::ostringstream out;
    out << value;
    return out.str();
}

} // namespace

CLI::Validator OptionChecks::integerAtLeast(long long minimum) {
    return CLI::Validator(
        [minimum](std::string& text) -> std::string {
            long long value = 0;
            const char* end = text.data() + text.size();
            const auto [stop, error] = std::from_chars(text.data(), end, value);
            if (error != std::errc() || stop != end || value < minimum) {
                return "must be a whole number at least " + std::to_string(minimum) + ", got `" + text + "`";
            }
            return {};
        },
        "INT>=" + std::to_string(minimum));
}

CLI::Validator OptionChecks::numberAtLeast(double minimum) {
    return CLI::Validator(
        [minimum](std::string& text) -> std::string {
            const std::optional<double> value = numberIn(text);
            if (!value || *value < minimum) {
                return "must be a number at least " + shown(minimum) + ", got `" + text + "`";
            }
            return {};
        },
        "NUMBER>=" + shown(minimum));
}

CLI::Validator OptionChecks::positiveNumber() {
    return CLI::Validator(
        [](std::string& text) -> std::string {
            const std::optional<double> value = numberIn(text);
            if (!value || *value <= 0.0) {
                return "must be a number greater than 0, got `" + text + "`";
            }
            return {};
        },
        "NUMBER>0");
}

std::map<std::string, std::string> OptionChecks::keyValues(const std::vector<std::string>& given, const std::string& flag) {
    std::map<std::string, std::string> values;
    for (const std::string& option : given) {
        const size_t equals = option.find('=');
        if (equals == std::string::npos || equals == 0) {
            throw std::invalid_argument(flag + " `" + option + "`: expected key=value");
        }
        values[option.substr(0, equals)] = option.substr(equals + 1);
    }
    return values;
}

} // namespace kvscope::cli
