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
};

/// Times the engine's layers on that workload: one prefill update per layer, then `steps` one-token
/// updates layer by layer, each preceded by the mask-size query; inputs are made before the clock.
class CacheBenchmark {
public:
    /// Returns {"type", "updates", "seconds", "us_per_update", "peak_tokens"} as the reference prints.
    static nlohmann::json run(const CacheBenchmarkOptions& options);
    /// The allowed `--type` values.
    static const char* allowedTypes();
};

} // namespace kvscope::cli
