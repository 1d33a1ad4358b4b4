// SPDX-License-Identifier: GPL-3.0-or-later
// A prompt's element-wise operations at the real models' shapes (SmolLM2-135M: rows of 576, 9 heads of 64, an MLP
// of 1536 with SiLU; Gemma 3 270M: rows of 640, 4 heads of 256, an MLP of 2048 with GELU's tanh form), 512 tokens,
// two threads: kvscope's loops per row (ops::rmsNorm, ops::applyRotary, ops::gatedActivation on the kernel
// threads) against the LibTorch operations they replace (what every prompt ran before). README.md's speed section
// records the numbers. Run it as kvscope-cli runs, with OMP_WAIT_POLICY=PASSIVE.
#include "kvscope/model/Architecture.h"
#include "kvscope/model/TensorOps.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>
#include <optional>

namespace {

namespace ops = kvscope::model::ops;
using kvscope::model::Activation;

constexpr int64_t kTokens = 512;

struct Shape {
    int64_t width;
    int64_t heads;
    int64_t headDim;
    int64_t intermediate;
    Activation activation;
};

/// Second argument 0: LibTorch's operations, 1: kvscope's loops.
bool kvscopeLoops(benchmark::State& state) {
    const bool loops = state.range(0) == 1;
    state.SetLabel(loops ? "kvscope" : "libtorch");
    at::set_num_threads(2);
    at::manual_seed(0);
    return loops;
}

void rmsNorm(benchmark::State& state, Shape shape, bool addOne) {
    const bool loops = kvscopeLoops(state);
    const at::Tensor x = at::randn({1, kTokens, shape.width});
    const at::Tensor weight = at::randn({shape.width});
    for (auto _ : state) {
        if (loops) {
            benchmark::DoNotOptimize(ops::rmsNorm(x, weight, 1e-6, addOne));
        } else {
            const at::Tensor normalised = x * at::rsqrt(x.pow(2).mean(-1, true) + 1e-6);
            benchmark::DoNotOptimize(addOne ? normalised * (weight + 1.0) : weight * normalised);
        }
    }
}

void rotary(benchmark::State& state, Shape shape) {
    const bool loops = kvscopeLoops(state);
    const at::Tensor x = at::randn({1, kTokens, shape.heads, shape.headDim}).transpose(1, 2);
    const auto [cos, sin] = ops::rotary(at::arange(kTokens, at::kLong).unsqueeze(0),
                                        ops::inverseFrequencies(shape.headDim, 10000.0, std::nullopt, at::kCPU));
    const int64_t half = shape.headDim / 2;
    for (auto _ : state) {
        if (loops) {
            benchmark::DoNotOptimize(ops::applyRotary(x, cos, sin));
        } else {
            const at::Tensor rotated = at::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
            benchmark::DoNotOptimize(x * cos + rotated * sin);
        }
    }
}

void gatedActivation(benchmark::State& state, Shape shape) {
    const bool loops = kvscopeLoops(state);
    // The gate and up halves of one stacked product's output, as the MLP has them.
    const at::Tensor stacked = at::randn({1, kTokens, 2 * shape.intermediate});
    const at::Tensor gate = stacked.narrow(-1, 0, shape.intermediate);
    const at::Tensor up = stacked.narrow(-1, shape.intermediate, shape.intermediate);
    for (auto _ : state) {
        if (loops) {
            benchmark::DoNotOptimize(ops::gatedActivation(gate, up, shape.activation));
        } else {
            benchmark::DoNotOptimize(ops::activate(gate, shape.activation) * up);
        }
    }
}

constexpr Shape kSmolLm2{576, 9, 64, 1536, Activation::Silu};
constexpr Shape kGemma3{640, 4, 256, 2048, Activation::GeluTanh};

} // namespace

BENCHMARK_CAPTURE(rmsNorm, smollm2, kSmolLm2, false)->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(rmsNorm, gemma3_270m, kGemma3, true)->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(rotary, smollm2, kSmolLm2)->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(rotary, gemma3_270m, kGemma3)->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(gatedActivation, smollm2, kSmolLm2)->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(gatedActivation, gemma3_270m, kGemma3)
    ->Arg(0)
    ->Arg(1)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_MAIN();
