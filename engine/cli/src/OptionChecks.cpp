// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cli/OptionChecks.h"

#include "kvscope/config/NumberText.h"

#include <stdexcept>

namespace kvscope::cli {

CLI::Validator OptionChecks::integerAtLeast(long long minimum) {
    return CLI::Validator(
        [minimum](std::string& text) -> std::string {
            const std::optional<long long> value = config::NumberText::wholeNumber(text);
            if (!value || *value < minimum) {
                return "must be a whole number at least " + std::to_string(minimum) + ", got `" + text + "`";
            }
            return {};
        },
        "INT>=" + std::to_string(minimum));
}

CLI::Validator OptionChecks::numberAtLeast(double minimum) {
    return CLI::Validator(
        [minimum](std::string& text) -> std::string {
            const std::optional<double> value = config::NumberText::number(text);
            if (!value || *value < minimum) {
                return "must be a number at least " + config::NumberText::shown(minimum) + ", got `" + text +
                       "`";
            }
            return {};
        },
        "NUMBER>=" + config::NumberText::shown(minimum));
}

CLI::Validator OptionChecks::positiveNumber() {
    return CLI::Validator(
        [](std::string& text) -> std::string {
            const std::optional<double> value = config::NumberText::number(text);
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
