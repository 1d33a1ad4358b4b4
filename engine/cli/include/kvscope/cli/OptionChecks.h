// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <CLI/CLI.hpp>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvscope::cli {

/// Command-line option checks whose messages say what is allowed ("--tokens: must be at least 1, got
/// 0"), instead of CLI11's raw numeric bounds; and enum options parsed through their name tables.
class OptionChecks {
public:
    /// A whole number no smaller than `minimum`.
    static CLI::Validator integerAtLeast(long long minimum);
    /// A number no smaller than `minimum`.
    static CLI::Validator numberAtLeast(double minimum);
    /// A number greater than 0.
    static CLI::Validator positiveNumber();
    /// `key=value` strings of a repeatable option as a map; std::invalid_argument naming `flag` otherwise.
    static std::map<std::string, std::string> keyValues(const std::vector<std::string>& given, const std::string& flag);

    /// An option holding one of an enum's names: `parse` is the enum's name-table lookup, `allowed` its
    /// list for the message. `target` keeps its default when the option is not given.
    template <typename Enum>
    static CLI::Option* addEnum(CLI::App& app, const std::string& name, Enum& target,
                                std::optional<Enum> (*parse)(std::string_view), const std::string& allowed,
                                const std::string& description) {
        CLI::Option* option = app.add_option_function<std::string>(
            name, [&target, parse](const std::string& value) { target = *parse(value); },
            description + " (" + allowed + ")");
        option->check(CLI::Validator(
            [parse, allowed](std::string& value) -> std::string {
                return parse(value) ? std::string() : "unknown value `" + value + "` (allowed: " + allowed + ")";
            },
            "NAME"));
        return option;
    }
};

} // namespace kvscope::cli
