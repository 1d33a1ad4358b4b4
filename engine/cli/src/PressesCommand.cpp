// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cli/PressesCommand.h"

#include "kvscope/press/PressCatalog.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <ostream>

namespace kvscope::cli {

CLI::App* PressesCommand::addSubcommand(CLI::App& app) {
    return app.add_subcommand("presses", "List the cache presses with their options (JSON)");
}

nlohmann::json PressesCommand::list() {
    nlohmann::json presses = nlohmann::json::array();
    for (const press::PressDescription& description : press::PressCatalog::presses()) {
        nlohmann::json options = nlohmann::json::array();
        for (const press::PressOption& option : description.options) {
            options.push_back({{"name", option.name},
                               {"type", option.type},
                               {"default", option.defaultValue},
                               {"meaning", option.meaning}});
        }
        presses.push_back({{"name", description.name},
                           {"phase", description.phase},
                           {"summary", description.summary},
                           {"options", options}});
    }
    return {{"presses", presses}};
}

int PressesCommand::execute(std::ostream& out) {
    out << list().dump(2) << std::endl;
    return 0;
}

} // namespace kvscope::cli
