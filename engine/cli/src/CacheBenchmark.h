#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>

namespace kvscope::cli {

/// The decode workload of the oracle's bench_reference.py, with the same flags.
struct CacheBenchmarkOptions {
    std::string type = "dynamic";
    int64_t layers = 8;
    int64_t batch = 1;
    int64_t heads = 8;
    int64_t headDim = 64;
    int64_t prefill = 128;
    int64_t steps = 512;
    int64_t window = 256;
    int nbits = 4;
    int64_t group = 64;
    int64_t residual = 128;
    int threads = 1;
    std::string device = "cpu";
    /// Attach a trace::RecordingSink to the cache (every type then runs through a Cache), to measure
    /// what recording events costs per update.
    bool record = false;
    /// Host-device link of the modeled transfers (`offloaded` on CPU): GB/s and microseconds per copy.
    double transferGBps = 25.0;
    double transferLatencyUs = 10.0;
};

/// Times the engine's layers on that workload: one prefill update per layer, then `steps` one-token
/// updates layer by layer, each preceded by the mask-size query; inputs are made before the clock.
class CacheBenchmark {
public:
    /// Returns {"type", "updates", "seconds", "us_per_update", "peak_tokens"} as the reference prints.
    /// `offloaded` adds the modeled timeline of its copies (CPU has no second device, see
    /// cache::ModeledStreams): "modeled_ms" (whole run, both lanes), "modeled_step_ms" (per decode step),
    /// "modeled_compute_only_ms" (the updates alone: the run without offloading), "modeled_transfer_ms"
    /// (all copies), "modeled_stall_ms" (updates waiting for prefetches), "modeled_transfers".
    /// With `record`, "recorded_events" is the number of events the sink received.
    static nlohmann::json run(const CacheBenchmarkOptions& options);
    /// The allowed `--type` values.
    static const char* allowedTypes();
};

} // namespace kvscope::cli
