// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cli/CliRunOptions.h"

#include <CLI/CLI.hpp>
#include <string>

namespace kvscope::cli {

void CliRunOptions::addTo(CLI::App& command, config::RunSettings& settings,
                          const std::vector<config::RunOption::Group>& groups) {
    for (const config::RunOption& option : config::RunOptionTable::options()) {
        if (config::RunOptionTable::takes(option, groups)) {
            addOption(command, settings, option);
        }
    }
}

void CliRunOptions::addOptions(CLI::App& command, config::RunSettings& settings,
                               const std::vector<config::RunOption>& options) {
    for (const config::RunOption& option : options) {
        addOption(command, settings, option);
    }
}

CLI::Option* CliRunOptions::addOption(CLI::App& command, config::RunSettings& settings,
                                      const config::RunOption& option) {
    // The tables are static: their entries outlive every command.
    const config::RunOption* entry = &option;
    CLI::App* app = &command;
    const auto read = [app, entry, &settings](const std::vector<std::string>& values) {
        const std::string conflict = config::RunOptionTable::conflict(
            *entry, [app](const std::string& other) { return app->count("--" + other) > 0; });
        if (!conflict.empty()) {
            throw CLI::ExcludesError(conflict, CLI::ExitCodes::ExcludesError);
        }
        for (const std::string& value : values) {
            if (const std::string refusal = entry->apply(settings, value); !refusal.empty()) {
                throw CLI::ValidationError("--" + entry->name, refusal);
            }
        }
    };
    const std::string flag = "--" + option.name;
    CLI::Option* added = nullptr;
    if (option.valueName.empty()) {
        added = command.add_flag_callback(
            flag, [read] { read({""}); }, option.help);
    } else if (option.repeatable) {
        added = command.add_option_function<std::vector<std::string>>(flag, read, option.help);
    } else {
        // Given twice, the last one counts, as in kvscope's QCommandLineParser.
        added = command.add_option_function<std::string>(
            flag, [read](const std::string& value) { read({value}); }, option.help);
        added->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    }
    added->type_name(option.valueName);
    added->default_str(option.current(settings));
    return added;
}

} // namespace kvscope::cli
