// SPDX-License-Identifier: GPL-3.0-or-later
// Cache presses against the work they save: SnapKV's prefill compression of one layer on a 4096-token
// prompt next to that layer's prefill attention, and DecodingPress's overhead per decode step.
#include "kvscope/model/TensorOps.h"
#include "kvscope/press/DecodingPress.h"
#include "kvscope/press/SnapKvPress.h"
#include "kvscope/press/TopKSelection.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>

#include <cmath>

namespace {

using namespace kvscope;

// A Llama-style layer at a small model's width: 8 query heads, 2 KV heads, head dim 64.
constexpr int64_t kHeads = 8;
constexpr int64_t kKeyValueHeads = 2;
constexpr int64_t kHeadDim = 64;
constexpr int64_t kHidden = kHeads * kHeadDim;

press::PressInputs layerInputs(int64_t tokens) {
    at::manual_seed(0);
    press::PressInputs inputs;
    inputs.keys = at::randn({1, kKeyValueHeads, tokens, kHeadDim});
    inputs.values = at::randn({1, kKeyValueHeads, tokens, kHeadDim});
    inputs.hiddenStates = at::randn({1, tokens, kHidden});
    inputs.queryWeight = at::randn({kHeads * kHeadDim, kHidden}) / std::sqrt(static_cast<double>(kHidden));
    const auto [cos, sin] = model::ops::rotary(
        at::arange(tokens).unsqueeze(0), model::ops::inverseFrequencies(kHeadDim, 10000.0, std::nullopt, at::kCPU));
    inputs.cos = cos.squeeze(1);
    inputs.sin = sin.squeeze(1);
    inputs.numHeads = kHeads;
    inputs.numKeyValueHeads = kKeyValueHeads;
    inputs.headDim = kHeadDim;
    return inputs;
}

void SnapKvPrefillCompression(benchmark::State& state) {
    at::set_num_threads(1);
    const press::PressInputs inputs = layerInputs(state.range(0));
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
    const int64_t tokens = state.range(0);
    const press::PressInputs inputs = layerInputs(tokens);
    const at::Tensor keyWeight = at::randn({kKeyValueHeads * kHeadDim, kHidden});
    const at::Tensor valueWeight = at::randn({kKeyValueHeads * kHeadDim, kHidden});
    const at::Tensor mask = at::ones({tokens, tokens}, at::kBool).tril().view({1, 1, tokens, tokens});
    const at::Tensor cos = inputs.cos.unsqueeze(1);
    const at::Tensor sin = inputs.sin.unsqueeze(1);
    for (auto _ : state) {
        const at::Tensor query = model::ops::applyRotary(
            model::ops::splitHeads(model::ops::linear(inputs.hiddenStates, inputs.queryWeight), kHeads), cos, sin);
        const at::Tensor keys = model::ops::applyRotary(
            model::ops::splitHeads(model::ops::linear(inputs.hiddenStates, keyWeight), kKeyValueHeads), cos, sin);
        const at::Tensor values = model::ops::splitHeads(model::ops::linear(inputs.hiddenStates, valueWeight), kKeyValueHeads);
        benchmark::DoNotOptimize(model::ops::attend(query, keys, values, mask, 1.0 / std::sqrt(double(kHeadDim))));
    }
}
BENCHMARK(PrefillAttention)->Arg(4096)->Unit(benchmark::kMillisecond);

/// The layer's own work in one decode step at a 4096-token cache: one token's q/k/v projections, RoPE and
/// attention over the cache. DecodingPressPerStep's time per item is measured against this one.
void DecodeStepAttention(benchmark::State& state) {
    at::set_num_threads(1);
    const int64_t tokens = state.range(0);
    const press::PressInputs inputs = layerInputs(tokens + 1);
    const at::Tensor keyWeight = at::randn({kKeyValueHeads * kHeadDim, kHidden});
    const at::Tensor valueWeight = at::randn({kKeyValueHeads * kHeadDim, kHidden});
    const at::Tensor hidden = inputs.hiddenStates.narrow(1, tokens, 1);
    const at::Tensor cos = inputs.cos.narrow(1, tokens, 1).unsqueeze(1);
    const at::Tensor sin = inputs.sin.narrow(1, tokens, 1).unsqueeze(1);
    const at::Tensor cachedKeys = inputs.keys.narrow(2, 0, tokens);
    const at::Tensor cachedValues = inputs.values.narrow(2, 0, tokens);
    const at::Tensor mask = at::ones({1, 1, 1, tokens + 1}, at::kBool);
    for (auto _ : state) {
        const at::Tensor query =
            model::ops::applyRotary(model::ops::splitHeads(model::ops::linear(hidden, inputs.queryWeight), kHeads), cos, sin);
        const at::Tensor key = model::ops::applyRotary(
            model::ops::splitHeads(model::ops::linear(hidden, keyWeight), kKeyValueHeads), cos, sin);
        const at::Tensor value = model::ops::splitHeads(model::ops::linear(hidden, valueWeight), kKeyValueHeads);
        const at::Tensor keys = at::cat({cachedKeys, key}, 2);
        const at::Tensor values = at::cat({cachedValues, value}, 2);
        benchmark::DoNotOptimize(model::ops::attend(query, keys, values, mask, 1.0 / std::sqrt(double(kHeadDim))));
    }
}
BENCHMARK(DecodeStepAttention)->Arg(4096)->Unit(benchmark::kMillisecond);

/// DecodingPress (SnapKV base, interval 512, target 4096) over 512 one-token passes of a 4096-token
/// layer: 511 buffered passes and one compression. Reported per decode step.
void DecodingPressPerStep(benchmark::State& state) {
    at::set_num_threads(1);
    constexpr int64_t interval = 512;
    constexpr int64_t target = 4096;
    press::PressInputs inputs = layerInputs(target + interval);
    const at::Tensor allKeys = inputs.keys;
    const at::Tensor allValues = inputs.values;
    const at::Tensor hidden = inputs.hiddenStates;
    press::DecodingPress decoding(std::make_shared<press::SnapKvPress>(64, 5), interval, target, 256);
    for (auto _ : state) {
        for (int64_t step = 1; step <= interval; ++step) {
            press::PressInputs pass = inputs;
            pass.keys = allKeys.narrow(2, 0, target + step);
            pass.values = allValues.narrow(2, 0, target + step);
            pass.hiddenStates = hidden.narrow(1, target + step - 1, 1);
            pass.cos = inputs.cos.narrow(1, target + step - 1, 1);
            pass.sin = inputs.sin.narrow(1, target + step - 1, 1);
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
