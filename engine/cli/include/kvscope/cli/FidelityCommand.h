// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/cli/RunCommand.h"

#include <nlohmann/json_fwd.hpp>

#include <iosfwd>

namespace CLI {
class App;
}

namespace kvscope::cli {

/// `kvscope-cli fidelity`: what a press costs a model's next-token distributions (runtime::PressFidelity):
/// the uncompressed run's greedy tokens, the pressed model fed the same tokens, and per token the KL
/// divergence and top-1 agreement. Takes run's model, prompt, cache and press options.
class FidelityCommand {
public:
    static CLI::App* addSubcommand(CLI::App& app, RunOptions& options);
    /// {"model", "press", "ratio", "options", "tokens", "prompt_tokens", "mean_kl", "top1_agreement",
    /// "first_disagreement", "kl", "top1_agrees", "compressed_layers", "notices", "text"}.
    static nlohmann::json run(const RunOptions& options);
    /// Prints the result on `out`; bad input throws (the caller exits 2).
    static int execute(const RunOptions& options, std::ostream& out);
};

} // namespace kvscope::cli
