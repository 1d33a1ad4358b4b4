// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>

namespace CLI {
class App;
}

namespace kvscope::cli {

/// `kvscope-cli info | replay | export` over session files (contract: docs/CLI.md; format:
/// sessions/FORMAT.md). Torch-free: replay needs no model.
class SessionCommands {
public:
    struct Options {
        std::string file;
        std::optional<std::int64_t> step; ///< replay: default the last intact step
        bool allSteps = false;            ///< replay: every step, as a JSON array
        std::string perfetto;             ///< export: the Chrome trace JSON to write
    };

    /// Adds `info`, `replay` and `export`, their options bound to `options`.
    static void addSubcommands(CLI::App& app, Options& options);

    /// Header, steps, layers, event counts; exit 2 when the file is damaged (the JSON still comes,
    /// with "damage" and "intact_steps"), or when it is not a session file.
    static int info(const Options& options, std::ostream& out, std::ostream& err);
    /// The state at a step as JSON; a damaged file serves its intact steps (warning on `err`).
    static int replay(const Options& options, std::ostream& out, std::ostream& err);
    /// Writes the Perfetto export; a damaged file exports its intact steps (warning on `err`).
    static int exportPerfetto(const Options& options, std::ostream& out, std::ostream& err);
};

} // namespace kvscope::cli
