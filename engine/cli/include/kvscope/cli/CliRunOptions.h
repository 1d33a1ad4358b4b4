// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/config/RunOptionTable.h"

#include <vector>

namespace CLI {
class App;
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
};

} // namespace kvscope::cli
