// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/config/RunSettings.h"
#include "kvscope/paged/PagedConfig.h"

#include <iosfwd>
#include <nlohmann/json_fwd.hpp>
#include <string>

namespace CLI {
class App;
}

namespace kvscope::cli {

/// The options of `kvscope-cli serve` (docs/CLI.md).
struct ServeOptions {
    std::string workload; ///< a workload file, or the name of a built-in one
    config::RunSettings
        run; ///< model source, tokenizer, weights, device, cache kind and press (refused), sampling
    paged::PagedConfig paged;
    std::string out;
};

/// `kvscope-cli serve`: runs a serving workload to the end with continuous batching over a paged KV cache
/// and prints one JSON document: per request its prompt and cached tokens, outputs, text, block tables,
/// preemptions, first-token and finish steps; the prefix hit rate, evictions, preemptions and peak blocks.
class ServeCommand {
public:
    static CLI::App* addSubcommand(CLI::App& app, ServeOptions& options);
    /// Runs and returns the summary; progress goes to `progress`. Throws on bad input (the caller exits 2).
    static nlohmann::json run(const ServeOptions& options, std::ostream& progress);
    static int execute(const ServeOptions& options, std::ostream& out, std::ostream& err);
    /// Empty when the run's cache kind and press can be paged, else why not (quantized, static and
    /// offloaded caches, and presses, are refused).
    static std::string cacheRefusal(const config::RunSettings& settings);
};

} // namespace kvscope::cli
