// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/config/RunOptionTable.h"

#include <vector>

namespace CLI {
class App;
class Option;
}

namespace kvscope::cli {

/// config::RunOptionTable as CLI11 options (kvscope-cli run and fidelity): each given value is read into
/// the settings by the table, its refusal an exit-2 parse error "--tokens: must be ...". Torch-free.
class CliRunOptions {
public:
    /// Adds the table's options of `groups` to `command`, read into `settings` (which must outlive the
    /// parse); --help shows `settings`' values now as the defaults.
    static void addTo(CLI::App& command, config::RunSettings& settings,
                      const std::vector<config::RunOption::Group>& groups);
    /// Adds `options` (a static table: paged::ServingOptionTable's) to `command` the same way.
    static void addOptions(CLI::App& command, config::RunSettings& settings,
                           const std::vector<config::RunOption>& options);
    /// Adds one option of a static table; returns CLI11's option (to mark it required, say).
    static CLI::Option* addOption(CLI::App& command, config::RunSettings& settings,
                                  const config::RunOption& option);
};

} // namespace kvscope::cli
