// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/config/RunSettings.h"
#include "kvscope/paged/PagedConfig.h"

#include <iosfwd>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace kvscope::cli {

/// The options of `kvscope-cli serve` (docs/CLI.md).
struct ServeOptions {
    /// Model source, tokenizer, weights, device, cache kind and press (refused), sampling; `run.serving`
    /// the workload (a file, or a built-in one's name) and the pool (paged::ServingOptionTable).
    config::RunSettings run;
    std::string out;
    /// --kv-events: the pool's prefix-cache events as JSON lines, as vLLM publishes them; empty: none. With
    /// --compare-serving the second run's go beside it (E.compared.jsonl).
    std::string kvEvents;
    /// --compare-serving: the changes of a second run of the same workload ("prefix-caching=off"); empty:
    /// one run.
    std::string compare;
    /// The step line on stderr (main keeps it to terminals: ProgressOutput).
    bool progress = true;
};

/// `kvscope-cli serve`: runs a serving workload to the end with continuous batching over a paged KV cache
/// and prints one JSON document: per request its prompt and cached tokens, outputs, text, block tables,
/// preemptions, first-token and finish steps; the prefix hit rate, evictions, preemptions and peak blocks.
/// With --compare-serving it serves the workload a second time with the changes and prints both summaries
/// and their numbers side by side.
class ServeCommand {
public:
    static CLI::App* addSubcommand(CLI::App& app, ServeOptions& options);
    /// Runs and returns the summary; progress goes to `progress`. Throws on bad input (the caller exits 2).
    static nlohmann::json run(const ServeOptions& options, std::ostream& progress);
    static int execute(const ServeOptions& options, std::ostream& out, std::ostream& err);
    /// The compare run's session file beside `out`: "S.kvsess" -> "S.compared.kvsess".
    static std::string comparedPath(const std::string& out);
    /// The numbers a comparison puts side by side, in order: steps, prefix_hit_rate, hit_tokens,
    /// query_tokens, preemptions, evictions, peak_blocks_used.
    static const std::vector<std::string>& comparedKeys();
    /// Empty when the run's cache kind and press can be paged, else why not (quantized, static and
    /// offloaded caches, and presses, are refused).
    static std::string cacheRefusal(const config::RunSettings& settings);
};

} // namespace kvscope::cli
