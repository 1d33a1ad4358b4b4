// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/config/RunSettings.h"

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace kvscope::config {

/// One command-line option of a run: its name, the word its value is shown as, its help, and how a given
/// value is read into RunSettings. Both command lines (kvscope-cli run / fidelity through CLI11, kvscope
/// through QCommandLineParser) are generated from these, so they accept, refuse and default alike.
struct RunOption {
    /// Which commands take it: every run takes Model and Press options; `fidelity` no Decoding ones
    /// (it decodes greedily by design). Serving: paged::ServingOptionTable's (serve, kvscope --workload).
    enum class Group { Model, Decoding, Press, Serving };

    std::string name;      ///< without the dashes: "tokens"
    std::string valueName; ///< "N" in `--tokens N`; empty for a flag, which takes no value
    std::string help;
    Group group = Group::Model;
    bool repeatable = false; ///< given again, each value is applied in turn (--press-option)
    /// Options it cannot be given with, and why (said in the refusal).
    std::vector<std::string> excludes;
    std::string excludesWhy;
    /// What `settings` hold for it, spelled as on the command line ("" when unset or a flag): the default
    /// that --help shows, taken from the settings a command starts from (RunSettings' own defaults).
    std::function<std::string(const RunSettings&)> current;
    /// Reads one given value into `settings` (a flag gets ""). Returns "" or the reason the value is
    /// refused, to follow "--name: " ("must be a whole number at least 1, got `0`").
    std::function<std::string(RunSettings&, const std::string&)> apply;
};

/// The options a run takes on every command line, in the order both --help texts list them and both
/// parsers apply them (a later option wins: --interval over --press-option compression_interval=...).
/// Torch- and Qt-free; the adapters are cli::CliRunOptions and gui::QtRunOptions.
class RunOptionTable {
public:
    static const std::vector<RunOption>& options();
    /// The option called `name` (no dashes), or null.
    static const RunOption* find(std::string_view name);
    /// Whether `option` belongs on a command that takes `groups`.
    static bool takes(const RunOption& option, const std::vector<RunOption::Group>& groups);
    /// Every group: what kvscope-cli run and kvscope take.
    static std::vector<RunOption::Group> allGroups();
    /// Refusal of `option` given together with an option it excludes ("--preset excludes --checkpoint:
    /// give one model source: ..."), or "" when none of them is given. `given` says whether a named option
    /// was given.
    static std::string conflict(const RunOption& option,
                                const std::function<bool(const std::string&)>& given);
};

} // namespace kvscope::config
