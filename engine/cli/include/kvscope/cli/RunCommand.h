// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/config/RunSettings.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace kvscope::runtime {
class CachePressHook;
}

namespace kvscope::cli {

/// The options of `kvscope-cli run` (docs/CLI.md): the run's settings (the command line reads them through
/// config::RunOptionTable), and what the command does around the run.
struct RunOptions {
    config::RunSettings run;
    std::string out;        ///< session file to record, appended step by step
    std::string promptFile; ///< read the prompt from this file instead of the settings' prompt
    bool check = false;
    bool progress = true;
    /// For callers that build options in code (the command line reads --prompt-file, --press-option,
    /// --interval and --target-size straight into `run`): key=value press options, and for decoding presses
    /// compression_interval / target_size, folded into run.press by settingsOf.
    std::vector<std::string> pressOptions;
    int64_t interval = 0;
    int64_t targetSize = 0;
};

/// `kvscope-cli run`: generates token by token with the chosen model and cache, shows progress on
/// stderr and prints a JSON summary (tokens, text, per-cache-type bytes, timings, tokens_per_second;
/// with --check, "max_abs_logit_diff" of every step against a cache-free recompute).
class RunCommand {
public:
    /// Adds the `run` subcommand, its options bound to `options`.
    static CLI::App* addSubcommand(CLI::App& app, RunOptions& options);
    /// The options' run settings with the prompt file read and the press folded in (pressSettings), validated.
    static config::RunSettings settingsOf(const RunOptions& options);
    /// Runs (a runtime::LiveSession, as the GUI's live sessions) and returns the summary; progress goes to
    /// `progress`. Throws on bad input.
    static nlohmann::json run(const RunOptions& options, std::ostream& progress);
    /// Runs, prints the summary on `out`; returns 0, or 1 when --check found a difference above the
    /// cache's tolerance. Bad input throws (the caller exits 2).
    static int execute(const RunOptions& options, std::ostream& out, std::ostream& err);
    /// The press the options ask for: run.press with --press-option, --interval and --target-size added.
    static config::PressSettings pressSettings(const RunOptions& options);
    /// {"name", "ratio", "options", "compressions": [{"step", "layer", "before", "after"}], "notices"}.
    static nlohmann::json pressSummary(const runtime::CachePressHook& hook);
};

} // namespace kvscope::cli
