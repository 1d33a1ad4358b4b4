// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/training/ModelTrainer.h"

#include <nlohmann/json_fwd.hpp>

#include <atomic>
#include <iosfwd>
#include <string>

namespace CLI {
class App;
}

namespace kvscope::cli {

/// The options of `kvscope-cli train` (docs/CLI.md).
struct TrainOptions {
    std::string preset;
    std::string corpus;
    std::string heldOut; ///< empty: the last 5% of the corpus
    std::string out;
    std::string dtype = "f16";
    int threads = 0; ///< 0: every core (runtime::ComputeThreads)
    bool progress = true;
    training::TrainingOptions training;
};

/// `kvscope-cli train`: trains a preset's built-in model on a text corpus and writes its weights as the
/// preset loader reads them (`resources/presets/<preset>.safetensors`); JSON summary on stdout.
class TrainCommand {
public:
    /// Adds the `train` subcommand, its options bound to `options`.
    static CLI::App* addSubcommand(CLI::App& app, TrainOptions& options);
    /// Trains, writes the weights, returns the summary {"preset", "steps", "interrupted", "diverged",
    /// "held_out_bits_per_byte", "evaluations", "seconds", "parameters", "out"}; progress goes to
    /// `progress`. Stops at the next step once `stop` is set and still writes the last step's weights.
    static nlohmann::json run(const TrainOptions& options, std::ostream& progress, const std::atomic<bool>* stop);
    /// Runs with Ctrl-C (SIGINT) setting the stop flag, prints the summary on `out`; returns 0, or 1 when
    /// training diverged. Bad input throws (the caller exits 2).
    static int execute(const TrainOptions& options, std::ostream& out, std::ostream& err);
    /// The weight dtypes --dtype accepts.
    static const char* allowedDtypes() { return "f16, bf16, f32"; }
};

} // namespace kvscope::cli
