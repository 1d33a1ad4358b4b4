// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kvscope::cli {

/// What `bench press` times: one press on one synthetic layer of `tokens` tokens.
struct PressBenchmarkOptions {
    std::string press = "snapkv";
    double ratio = 0.5;
    /// `key=value` press options, as `run --press-option` takes them.
    std::vector<std::string> pressOptions;
    int64_t tokens = 4096;
    int64_t heads = 8;
    int64_t keyValueHeads = 2;
    int64_t headDim = 64;
    /// Timed compressions (prefill presses) or decoding passes (decoding presses); the median is reported.
    int64_t repeats = 5;
    int threads = 1;
};

/// `kvscope-cli bench press`: any registered press's work on one layer against the attention work it follows,
/// the press built by its registration and applied as a generation applies it (press::WorkloadPressRun). A
/// prefill-phase press is timed deciding on the whole prompt (scores, top-k, gathering the kept keys and
/// values) next to the layer's prefill attention; a decoding-phase press per decode step, at the cache size
/// it holds, over one compression interval or `repeats` steps, next to the layer's own decode step.
class PressBenchmark {
public:
    static CLI::App* addSubcommand(CLI::App& bench, PressBenchmarkOptions& options);
    /// {"press", "phase", "tokens", "heads", "kv_heads", "head_dim", "ratio", "threads", then for a prefill
    /// press "compression_ms", "attention_ms", "share_of_attention", "kept"; for a decoding press
    /// "steps", "press_ms_per_step", "decode_step_ms", "share_of_decode_step", "compressions"}.
    static nlohmann::json run(const PressBenchmarkOptions& options);
};

} // namespace kvscope::cli
