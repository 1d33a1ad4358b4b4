// SPDX-License-Identifier: GPL-3.0-or-later
// How a bf16 checkpoint's projections compute on CPU, one thread, Qwen3-0.6B's MLP shape (3072 x 1024): the
// weight widened at load (float32, 4 bytes per weight resident: the old way), widened per matmul
// (ops::linear's way: 2 bytes resident), and computed in bf16 (input rounded to bf16, LibTorch's bf16 GEMM:
// oneDNN where the CPU has AVX-512, a slow fallback elsewhere; the result is rounded too). Rows: 1 (a decode
// step) and 256 (a prefill chunk). README.md, "Memory", records the numbers and the pick.
#include "kvscope/model/TensorOps.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>

namespace {

constexpr int64_t kOut = 3072;
constexpr int64_t kIn = 1024;

at::Tensor weight() {
    at::manual_seed(0);
    return (at::randn({kOut, kIn}) * 0.02).to(at::kBFloat16);
}

void widenedAtLoad(benchmark::State& state) {
    at::set_num_threads(1);
    const at::Tensor w = weight().to(at::kFloat);
    const at::Tensor x = at::randn({state.range(0), kIn});
    for (auto _ : state) {
        benchmark::DoNotOptimize(at::linear(x, w));
    }
    state.SetItemsProcessed(state.iterations() * state.range(0));
}

void widenedPerMatmul(benchmark::State& state) {
    at::set_num_threads(1);
    const at::Tensor w = weight();
    const at::Tensor x = at::randn({state.range(0), kIn});
    for (auto _ : state) {
        benchmark::DoNotOptimize(kvscope::model::ops::linear(x, w));
    }
    state.SetItemsProcessed(state.iterations() * state.range(0));
}

void inBf16(benchmark::State& state) {
    at::set_num_threads(1);
    const at::Tensor w = weight();
    const at::Tensor x = at::randn({state.range(0), kIn});
    for (auto _ : state) {
        benchmark::DoNotOptimize(at::linear(x.to(at::kBFloat16), w).to(at::kFloat));
    }
    state.SetItemsProcessed(state.iterations() * state.range(0));
    // How far bf16 compute lands from the float32 result, relative to its scale.
    const at::Tensor exact = at::linear(x, w.to(at::kFloat));
    const at::Tensor rounded = at::linear(x.to(at::kBFloat16), w).to(at::kFloat);
    state.counters["max_rel_error"] = ((rounded - exact).abs().max() / exact.abs().max()).item<double>();
}

} // namespace

BENCHMARK(widenedAtLoad)->Arg(1)->Arg(256)->Unit(benchmark::kMicrosecond);
BENCHMARK(widenedPerMatmul)->Arg(1)->Arg(256)->Unit(benchmark::kMicrosecond);
BENCHMARK(inBf16)->Arg(1)->Arg(256)->Unit(benchmark::kMicrosecond);
BENCHMARK_MAIN();
