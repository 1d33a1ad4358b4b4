// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/config/RunSettings.h"

#include <CLI/CLI.hpp>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kvscope::cli {

/// What `bench model` runs: a model source, a prompt of `promptTokens` ids, `decodeTokens` greedy steps.
struct ModelBenchmarkOptions {
    /// The model source (preset, config.json or checkpoint) and the threads; the rest of the run is fixed.
    config::RunSettings run;
    int64_t promptTokens = 128;
    int64_t decodeTokens = 32;
    /// Timed runs of each loop; the median of each phase is reported.
    int64_t repeats = 3;
    /// Attach a session writer (a temporary file) to the engine's events, as `run --out` does.
    bool record = true;
    /// Whether the plain-LibTorch loop runs beside the engine (where it covers the model); without it the
    /// process's peak memory is the engine's own.
    bool plain = true;
};

/// `kvscope-cli bench model`: prefill and decode tokens/s of kvscope's engine (Generator, dynamic cache,
/// events) against a plain-LibTorch loop of the same model written here (same math, a concatenating KV
/// cache, no cache engine, no events), with the engine's overhead in percent and the BLAS and threads in use.
class ModelBenchmark {
public:
    static CLI::App* addSubcommand(CLI::App& bench, ModelBenchmarkOptions& options);
    /// {"model", "prompt_tokens", "decode_tokens", "repeats", "recorded", "engine" and "plain" (each
    /// {"prefill_tokens_per_s", "decode_tokens_per_s", "prefill_ms", "decode_ms", "prefill_cpu_ms",
    /// "decode_cpu_ms"}: medians, and "prefill_quiet_ms", "decode_quiet_ms": see quietSeconds),
    /// "overhead_percent", "overhead_cpu_percent" and "overhead_quiet_percent" ({"prefill", "decode"}),
    /// "tokens_match", "threads", "blas"}. Throws runtime::GenerationError for a model the plain loop
    /// does not cover (it names the families it does).
    static nlohmann::json run(const ModelBenchmarkOptions& options);

    /// A loop's time with a shared machine's interference taken out: each step's fastest of the repeats,
    /// summed over the steps (`stepSeconds[repeat][step]`, every repeat as long). Interference only ever adds
    /// time and rarely hits the same step of every repeat, while a cost the loop itself pays at some steps
    /// (a snapshot every N steps) recurs at the same step of every repeat and stays in.
    static double quietSeconds(const std::vector<std::vector<double>>& stepSeconds);
};

} // namespace kvscope::cli
