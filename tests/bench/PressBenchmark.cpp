// SPDX-License-Identifier: GPL-3.0-or-later
// Cache presses against the work they save: SnapKV's prefill compression of one layer on a 4096-token
// prompt next to that layer's prefill attention, and DecodingPress's overhead per decode step next to the
// layer's own decode step. The layer is press::PressWorkload's (8 query heads, 2 KV heads, head dim 64),
// the same that `kvscope-cli bench press` times.
#include "kvscope/press/DecodingPress.h"
#include "kvscope/press/PressWorkload.h"
#include "kvscope/press/SnapKvPress.h"
#include "kvscope/press/TopKSelection.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

namespace {

using namespace kvscope;

void SnapKvPrefillCompression(benchmark::State& state) {
    at::set_num_threads(1);
    const press::PressWorkload workload(state.range(0));
    const press::PressInputs& inputs = workload.inputs();
    const press::SnapKvPress snapkv(64, 5);
    for (auto _ : state) {
        const press::PressSelection selection = snapkv.select(inputs, 0.5);
        benchmark::DoNotOptimize(press::TopKSelection::gather(inputs.keys, selection.keptIndices));
        benchmark::DoNotOptimize(press::TopKSelection::gather(inputs.values, selection.keptIndices));
    }
}
BENCHMARK(SnapKvPrefillCompression)->Arg(4096)->Unit(benchmark::kMillisecond);

/// The layer's own prefill attention: q/k/v projections, RoPE and causal eager attention.
void PrefillAttention(benchmark::State& state) {
    at::set_num_threads(1);
    const press::PressWorkload workload(state.range(0));
    for (auto _ : state) {
        benchmark::DoNotOptimize(workload.prefillAttention());
    }
}
BENCHMARK(PrefillAttention)->Arg(4096)->Unit(benchmark::kMillisecond);

/// The layer's own work in one decode step at a 4096-token cache. DecodingPressPerStep's time per item
/// is measured against this one.
void DecodeStepAttention(benchmark::State& state) {
    at::set_num_threads(1);
    const int64_t tokens = state.range(0);
    const press::PressWorkload workload(tokens + 1);
    for (auto _ : state) {
        benchmark::DoNotOptimize(workload.decodeStepAttention(tokens));
    }
}
BENCHMARK(DecodeStepAttention)->Arg(4096)->Unit(benchmark::kMillisecond);

/// DecodingPress (SnapKV base, interval 512, target 4096) over 512 one-token passes of a 4096-token
/// layer: 511 buffered passes and one compression. Reported per decode step.
void DecodingPressPerStep(benchmark::State& state) {
    at::set_num_threads(1);
    constexpr int64_t interval = 512;
    constexpr int64_t target = 4096;
    const press::PressWorkload workload(target + interval);
    std::vector<press::PressInputs> passes;
    for (int64_t step = 1; step <= interval; ++step) {
        passes.push_back(workload.decodingPass(target + step));
    }
    press::DecodingPress decoding(std::make_shared<press::SnapKvPress>(64, 5), interval, target, 256);
    for (auto _ : state) {
        for (const press::PressInputs& pass : passes) {
            if (decoding.append(pass, 1)) {
                benchmark::DoNotOptimize(decoding.compress(pass).selection.keptIndices);
            }
        }
    }
    state.SetItemsProcessed(state.iterations() * interval);
}
BENCHMARK(DecodingPressPerStep)->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();
