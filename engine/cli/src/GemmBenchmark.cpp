// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cli/GemmBenchmark.h"

#include "kvscope/cli/OptionChecks.h"
#include "kvscope/runtime/ComputeThreads.h"

#include <ATen/ATen.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <vector>

namespace kvscope::cli {

CLI::App* GemmBenchmark::addSubcommand(CLI::App& bench, GemmBenchmarkOptions& options) {
    CLI::App* command = bench.add_subcommand("gemm", "GFLOP/s of a float matrix product on the BLAS in use");
    command->add_option("--m", options.m, "Rows of A and C (tokens)")->check(OptionChecks::integerAtLeast(1));
    command->add_option("--k", options.k, "Columns of A, rows of B (model width)")
        ->check(OptionChecks::integerAtLeast(1));
    command->add_option("--n", options.n, "Columns of B and C (output width)")
        ->check(OptionChecks::integerAtLeast(1));
    command->add_option("--repeats", options.repeats, "Timed products (median)")
        ->check(OptionChecks::integerAtLeast(1));
    command->add_option("--threads", options.threads, "CPU threads (0: every core)")
        ->check(OptionChecks::integerAtLeast(0));
    return command;
}

nlohmann::json GemmBenchmark::run(const GemmBenchmarkOptions& options) {
    const int threads = runtime::ComputeThreads::apply(options.threads);
    at::manual_seed(0);
    const at::Tensor a = at::randn({options.m, options.k});
    const at::Tensor b = at::randn({options.k, options.n});
    at::Tensor c = at::empty({options.m, options.n});
    at::mm_out(c, a, b); // warm-up: the BLAS's thread pool and buffers
    std::vector<double> seconds;
    for (int64_t repeat = 0; repeat < options.repeats; ++repeat) {
        const auto start = std::chrono::steady_clock::now();
        at::mm_out(c, a, b);
        seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(seconds.begin(), seconds.end());
    const double median = seconds[seconds.size() / 2];
    const double flops = 2.0 * static_cast<double>(options.m) * static_cast<double>(options.k) *
                         static_cast<double>(options.n);
    const auto rounded = [](double value) { return std::round(value * 100.0) / 100.0; };
    nlohmann::json result = {{"m", options.m},
                             {"k", options.k},
                             {"n", options.n},
                             {"repeats", options.repeats},
                             {"median_ms", rounded(median * 1e3)},
                             {"gflops", rounded(flops / median / 1e9)},
                             {"best_gflops", rounded(flops / seconds.front() / 1e9)}};
    result.update(runtime::ComputeThreads::describe());
    result["threads"] = threads;
    return result;
}

} // namespace kvscope::cli
