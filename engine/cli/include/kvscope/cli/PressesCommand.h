// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <iosfwd>

namespace CLI {
class App;
}

namespace kvscope::cli {

/// `kvscope-cli presses`: every cache press with its options, as JSON.
class PressesCommand {
public:
    /// Adds the `presses` subcommand to `app`.
    static CLI::App* addSubcommand(CLI::App& app);
    /// {"presses": [{"name", "phase", "summary", "options": [{"name", "type", "default", "meaning"}]}]}.
    static nlohmann::json list();
    /// Prints list() on `out`; returns the exit code.
    static int execute(std::ostream& out);
};

} // namespace kvscope::cli
