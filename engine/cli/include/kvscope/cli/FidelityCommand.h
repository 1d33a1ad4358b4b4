// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/cli/RunCommand.h"

#include <nlohmann/json_fwd.hpp>

#include <iosfwd>

namespace CLI {
class App;
}

namespace kvscope::cli {

/// `kvscope-cli fidelity`'s options: run's, and where the uncompressed reference is saved or read from.
struct FidelityOptions {
    RunOptions run;
    /// Writes the uncompressed run (runtime::FidelityReference) to this file; without a press, that is all.
    std::string saveReference;
    /// Measures against this reference instead of recomputing it; refused if made for other settings.
    std::string reference;
};

/// `kvscope-cli fidelity`: what a press costs a model's next-token distributions (runtime::PressFidelity):
/// the uncompressed run's greedy tokens, the pressed model fed the same tokens, and per token the KL
/// divergence and top-1 agreement. Without a press, what a quantising cache (quantized, llamacpp) costs against
/// the dynamic cache, the same way. Takes run's model, prompt, cache and press options. The uncompressed run
/// can be saved once (--save-reference) and measured against by many calls (--reference).
class FidelityCommand {
public:
    static CLI::App* addSubcommand(CLI::App& app, FidelityOptions& options);
    /// {"model", "cache", "against" (the reference's cache), "press", "ratio", "options", "tokens", "prompt_tokens", "mean_kl", "top1_agreement",
    /// "first_disagreement", "kl", "top1_agrees", "compressed_layers", "notices", "text"}, the same with a
    /// reference as without; with --save-reference and no press {"model", "prompt_tokens", "tokens",
    /// "reference", "text"}.
    static nlohmann::json run(const FidelityOptions& options);
    /// Prints the result on `out`; bad input throws (the caller exits 2).
    static int execute(const FidelityOptions& options, std::ostream& out);
};

} // namespace kvscope::cli
