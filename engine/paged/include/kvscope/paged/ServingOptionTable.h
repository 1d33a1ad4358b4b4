// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/config/RunOptionTable.h"

#include <functional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace kvscope::paged {

struct WorkloadPool;

/// The serving options of both command lines (`kvscope-cli serve` and `kvscope --workload`), beside
/// config::RunOptionTable: entries of group Serving read into RunSettings::serving, from which both
/// grammars are generated (cli::CliRunOptions, gui::QtRunOptions), so they accept, refuse and default
/// alike. Also reads the changes a compare run makes ("prefix-caching=off,num-blocks=32"). Torch-free.
class ServingOptionTable {
public:
    /// workload, block-size, num-blocks, max-num-batched-tokens, max-num-seqs, no-prefix-caching,
    /// free-policy, prefix-caching-hash-algo, in the order --help lists them.
    static const std::vector<config::RunOption>& options();
    /// The option called `name` (no dashes), or null.
    static const config::RunOption* find(std::string_view name);
    /// The option that asks for a compare run: `--compare-serving CHANGES` (kvscope and kvscope-cli serve).
    static const config::RunOption& compareOption();

    /// `base` with the changes `spec` names: comma-separated KEY=VALUE, each KEY a serving option but the
    /// workload (block-size=8, num-blocks=32, max-num-batched-tokens=64, max-num-seqs=2, free-policy=current)
    /// or prefix-caching=on|off. Returns the changed settings, or the refusal naming the bad change, the
    /// allowed keys and values.
    static std::variant<config::ServingSettings, std::string> changed(const config::ServingSettings& base,
                                                                      std::string_view spec);
    /// Whether the user gave the option `name` (no dashes) on the command line.
    using GivenOption = std::function<bool(std::string_view name)>;
    /// `serving` with `pool`'s values (a workload's suggested pool) for each of block-size, num-blocks,
    /// max-num-batched-tokens and max-num-seqs the pool names and the user did not give.
    static config::ServingSettings withPool(const config::ServingSettings& serving, const WorkloadPool& pool,
                                            const GivenOption& given);
    /// withPool with the pool `serving.workload` suggests (resolved and read here): what both command lines
    /// do once every option is read, before --compare-serving's changes. A workload that does not resolve or
    /// read leaves `serving` as it is: the run itself then says what is wrong.
    static config::ServingSettings withSuggestedPool(const config::ServingSettings& serving,
                                                     const GivenOption& given);

    /// What differs from `a` in `b`, in words for labels and summaries: "prefix caching off, 32 blocks";
    /// "the same settings" when nothing does.
    static std::string describeChanges(const config::ServingSettings& a, const config::ServingSettings& b);
};

} // namespace kvscope::paged
