// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>

namespace kvscope::cli {

/// What `bench gemm` times: C[m, n] = A[m, k] B[k, n] in float32, a projection of a 512-token prefill
/// of a 1024-wide model into a 3072-wide MLP by default.
struct GemmBenchmarkOptions {
    int64_t m = 512;
    int64_t k = 1024;
    int64_t n = 3072;
    /// Timed products; the median is reported.
    int64_t repeats = 10;
    /// CPU threads (0: every core, as model compute uses).
    int threads = 0;
};

/// `kvscope-cli bench gemm`: the speed of the BLAS that LibTorch multiplies through here, to tell an
/// optimised BLAS (OpenBLAS: tens of GFLOP/s per core) from the reference one (about 2 GFLOP/s).
class GemmBenchmark {
public:
    static CLI::App* addSubcommand(CLI::App& bench, GemmBenchmarkOptions& options);
    /// {"m", "k", "n", "repeats", "median_ms", "gflops" (of the median), "best_gflops", "threads", "blas"}.
    static nlohmann::json run(const GemmBenchmarkOptions& options);
};

} // namespace kvscope::cli
