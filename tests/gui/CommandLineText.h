// SPDX-License-Identifier: GPL-3.0-or-later
// Run settings spelled as a command line, for the golden outputs of the dialog and the launcher.
#pragma once

#include "kvscope/config/RunOptionTable.h"
#include "kvscope/config/RunSettings.h"
#include "kvscope/paged/ServingOptionTable.h"

#include <string>

namespace kvscope::gui::testing {

/// Every option of config::RunOptionTable (and, serving, paged::ServingOptionTable) that holds a value, as
/// `--name value`, then the flags and the press options: two settings that differ spell differently.
inline std::string commandLineOf(const config::RunSettings& settings) {
    std::string line = "kvscope";
    const auto spell = [&](const config::RunOption& option) {
        const std::string value = option.current ? option.current(settings) : std::string();
        if (!value.empty()) {
            line += " --" + option.name + " " + value;
        }
    };
    for (const config::RunOption& option : config::RunOptionTable::options()) {
        spell(option);
    }
    if (settings.serving) {
        for (const config::RunOption& option : paged::ServingOptionTable::options()) {
            spell(option);
        }
    }
    line += settings.chat ? " --chat" : "";
    line += settings.ignoreEos ? " --ignore-eos" : "";
    for (const auto& [key, value] : settings.press.options) {
        line += " --press-option " + key + "=" + value;
    }
    return line;
}

} // namespace kvscope::gui::testing
