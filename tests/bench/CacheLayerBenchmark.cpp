// SPDX-License-Identifier: GPL-3.0-or-later
// Per-update cost of every layer kind on the decode workload (one token per update, 8 heads x 64),
// and the LibTorch primitives an update is made of.
#include "kvscope/cache/DynamicLayer.h"
#include "kvscope/cache/DynamicSlidingWindowLayer.h"
#include "kvscope/cache/HqqQuantizer.h"
#include "kvscope/cache/MinMaxQuantizer.h"
#include "kvscope/cache/QuantizedLayer.h"
#include "kvscope/cache/StaticLayer.h"
#include "kvscope/cache/StaticSlidingWindowLayer.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>

#include <functional>
#include <memory>

namespace {

using namespace kvscope::cache;

constexpr int64_t kHeads = 8;
constexpr int64_t kHeadDim = 64;

at::Tensor token() { return at::randn({1, kHeads, 1, kHeadDim}); }

/// Prefills `context` tokens, then times one-token updates; the layer is rebuilt every `context`
/// updates so that the measured context stays between context and 2 x context.
void decode(benchmark::State& state, const std::function<std::unique_ptr<AttentionLayer>(int64_t)>& make) {
    at::set_num_threads(1);
    const int64_t context = state.range(0);
    const at::Tensor prefill = at::randn({1, kHeads, context, kHeadDim});
    const at::Tensor keys = token();
    const at::Tensor values = token();
    std::unique_ptr<AttentionLayer> layer;
    int64_t updates = 0;
    for (auto _ : state) {
        if (!layer || updates == context) {
            state.PauseTiming();
            layer = make(context);
            layer->update(prefill, prefill);
            updates = 0;
            state.ResumeTiming();
        }
        benchmark::DoNotOptimize(layer->maskSizes(1));
        benchmark::DoNotOptimize(layer->update(keys, values));
        ++updates;
    }
    if (auto* quantized = dynamic_cast<QuantizedLayer*>(layer.get())) {
        state.counters["unsettled"] = static_cast<double>(quantized->keySequence().unsettledTokens());
        state.counters["quantized"] = static_cast<double>(quantized->quantizedTokens());
    }
}

void BM_DynamicLayer(benchmark::State& state) {
    decode(state, [](int64_t) { return std::make_unique<DynamicLayer>(); });
}
void BM_DynamicSlidingWindowLayer(benchmark::State& state) {
    decode(state, [](int64_t context) { return std::make_unique<DynamicSlidingWindowLayer>(context / 2); });
}
void BM_StaticLayer(benchmark::State& state) {
    decode(state, [](int64_t context) { return std::make_unique<StaticLayer>(2 * context + 1); });
}
void BM_StaticSlidingWindowLayer(benchmark::State& state) {
    decode(state, [](int64_t context) { return std::make_unique<StaticSlidingWindowLayer>(4 * context, context / 2); });
}
void BM_MinMaxQuantizedLayer(benchmark::State& state) {
    decode(state, [](int64_t) {
        return std::make_unique<QuantizedLayer>(std::make_shared<MinMaxQuantizer>(4, 64), 0, 0, 128);
    });
}
void BM_HqqQuantizedLayer(benchmark::State& state) {
    decode(state, [](int64_t) { return std::make_unique<QuantizedLayer>(std::make_shared<HqqQuantizer>(4, 64), 1, 1, 128); });
}

void BM_NarrowView(benchmark::State& state) {
    const at::Tensor storage = at::zeros({1, kHeads, 1024, kHeadDim});
    for (auto _ : state) {
        benchmark::DoNotOptimize(storage.narrow(2, 0, 512));
    }
}

void BM_CopyOneToken(benchmark::State& state) {
    at::set_num_threads(1);
    const at::Tensor storage = at::zeros({1, kHeads, 1024, kHeadDim});
    const at::Tensor source = token();
    for (auto _ : state) {
        storage.narrow(2, 7, 1).copy_(source);
    }
}

BENCHMARK(BM_DynamicLayer)->Arg(512)->Arg(2048);
BENCHMARK(BM_DynamicSlidingWindowLayer)->Arg(512)->Arg(2048);
BENCHMARK(BM_StaticLayer)->Arg(512)->Arg(2048);
BENCHMARK(BM_StaticSlidingWindowLayer)->Arg(512)->Arg(2048);
BENCHMARK(BM_MinMaxQuantizedLayer)->Arg(512)->Arg(2048);
BENCHMARK(BM_HqqQuantizedLayer)->Arg(512);
BENCHMARK(BM_NarrowView);
BENCHMARK(BM_CopyOneToken);

} // namespace

namespace {
void BM_MinMaxQuantizedNoFlush(benchmark::State& state) {
    decode(state, [](int64_t) {
        return std::make_unique<QuantizedLayer>(std::make_shared<MinMaxQuantizer>(4, 64), 0, 0, 1 << 20);
    });
}
void BM_MinMaxRoundTrip(benchmark::State& state) {
    at::set_num_threads(1);
    MinMaxQuantizer quantizer(4, 64);
    const at::Tensor tokens = at::randn({1, kHeads, state.range(0), kHeadDim});
    for (auto _ : state) {
        benchmark::DoNotOptimize(quantizer.dequantize(quantizer.quantize(tokens, 0)));
    }
}
BENCHMARK(BM_MinMaxQuantizedNoFlush)->Arg(512);
BENCHMARK(BM_MinMaxRoundTrip)->Arg(1)->Arg(128)->Arg(256);
} // namespace
