// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cli/PressesCommand.h"

#include "kvscope/press/PressCatalog.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <ostream>
#include <utility>

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
        const config::PressPolicy& policy = description.policy;
        nlohmann::json reads = nlohmann::json::array({"keys"});
        for (const auto& [read, what] :
             {std::pair{policy.values, "values"}, std::pair{policy.queries, "queries"},
              std::pair{policy.attentions, "attention weights"}, std::pair{policy.outputProjection, "o_proj"},
              std::pair{policy.keyProjection, "k_proj"}}) {
            if (read) {
                reads.push_back(what);
            }
        }
        presses.push_back({{"name", description.name},
                           {"kvpress", description.referenceName},
                           {"display_name", description.displayName},
                           {"kind", description.kind},
                           {"phase", description.phase},
                           {"summary", description.summary},
                           {"sentence", description.sentence},
                           {"policy",
                            {{"reads", reads},
                             {"when", policy.when},
                             {"effect", policy.effect},
                             {"saves_memory", policy.savesMemory()}}},
                           {"options", options}});
        if (!description.keptAllSentence.empty()) {
            presses.back()["sentence_kept_all"] = description.keptAllSentence;
        }
    }
    return {{"presses", presses}};
}

int PressesCommand::execute(std::ostream& out) {
    out << list().dump(2) << std::endl;
    return 0;
}

} // namespace kvscope::cli
