// SPDX-License-Identifier: GPL-3.0-or-later
// Attention at the real models' shapes (SmolLM2-135M: 9 query heads over 3 KV heads of 64; Gemma 3 270M: 4 over 1
// of 256): a decode step's attention over every layer's cache of 512 or 2048 tokens on two threads, kvscope's
// decode kernels (DecodeAttention: fused, and as two products) against LibTorch's products; one layer's causal
// prompt of 512 or 2048 tokens on two threads, the tiles (PrefillAttention) against LibTorch's products (what a
// processor without AVX2 runs, and what every step and prompt ran before). README.md's speed section records the
// numbers. Run it as kvscope-cli runs, with OMP_WAIT_POLICY=PASSIVE (libgomp reads it when it loads): LibTorch's
// OpenMP threads otherwise spin after each softmax on the cores the kernel threads need.
#include "kvscope/gguf/BlockType.h"
#include "kvscope/model/MaskBuilder.h"
#include "kvscope/model/TensorOps.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>

namespace {

using kvscope::gguf::BlockType;
using kvscope::gguf::KernelLevel;

/// Uses the kernel level of the benchmark's second argument and labels the run `kernels` or `libtorch` (the
/// portable level: LibTorch's products); false, the run skipped, where this processor does not run that level.
bool useLevel(benchmark::State& state, const char* kernels) {
    const auto level = static_cast<KernelLevel>(state.range(1));
    if (BlockType::useKernelLevel(level) != level) {
        state.SkipWithError("this processor does not run that kernel level");
        return false;
    }
    state.SetLabel(level == KernelLevel::Portable ? "libtorch" : kernels);
    return true;
}

/// A decode step's attention on two threads, over every layer's cache in turn as a step reads them (30 layers for
/// SmolLM2, 18 for Gemma 3: at 2048 tokens 94 and 75 MB, more than the last-level cache holds, so the keys and
/// values come from memory as in a real step); third argument 1: the fused step (DecodeAttention::attend, what a
/// step runs where no one reads the weights), 0: the scores and weighted values as two products with LibTorch's
/// softmax between (what it runs where the weights are read, and what every step ran before).
void decodeAttention(benchmark::State& state, int64_t heads, int64_t kvHeads, int64_t dim, int64_t layers) {
    const int64_t length = state.range(0);
    const bool fused = state.range(2) == 1;
    if (!useLevel(state, fused ? "kernels, fused" : "kernels, two products")) {
        return;
    }
    at::set_num_threads(2);
    at::manual_seed(0);
    const at::Tensor query = at::randn({1, heads, 1, dim});
    // Each layer's cache view: the first rows of a larger buffer, as SequenceBuffer hands it out.
    std::vector<std::pair<at::Tensor, at::Tensor>> caches;
    for (int64_t layer = 0; layer < layers; ++layer) {
        caches.emplace_back(at::randn({1, kvHeads, length + 256, dim}).narrow(2, 0, length),
                            at::randn({1, kvHeads, length + 256, dim}).narrow(2, 0, length));
    }
    at::Tensor weights;
    for (auto _ : state) {
        for (const auto& [keys, values] : caches) {
            benchmark::DoNotOptimize(
                kvscope::model::ops::attend(query, keys, values, at::Tensor(), 0.125, 0.0, fused ? nullptr : &weights));
        }
    }
    BlockType::useKernelLevel(BlockType::supportedKernelLevel());
    state.SetBytesProcessed(state.iterations() * layers * 2 * length * kvHeads * dim * 4);
}

/// One layer's attention over a causal prompt (the prefill), on two threads: the tiles' running softmax
/// (PrefillAttention) against LibTorch's products over chunks of query rows (what a processor without AVX2 runs).
void prefillAttention(benchmark::State& state, int64_t heads, int64_t kvHeads, int64_t dim) {
    const int64_t length = state.range(0);
    if (!useLevel(state, "tiles")) {
        return;
    }
    at::set_num_threads(2);
    at::manual_seed(0);
    const at::Tensor query = at::randn({1, length, heads, dim}).transpose(1, 2);
    const at::Tensor keys = at::randn({1, kvHeads, length, dim});
    const at::Tensor values = at::randn({1, kvHeads, length, dim});
    const at::Tensor mask = kvscope::model::MaskBuilder::build(kvscope::model::AttentionKind::FullAttention, 0, length,
                                                               0, {length, 0}, at::Tensor(), at::kCPU);
    for (auto _ : state) {
        benchmark::DoNotOptimize(kvscope::model::ops::attend(query, keys, values, mask, 0.125));
    }
    BlockType::useKernelLevel(BlockType::supportedKernelLevel());
}

} // namespace

BENCHMARK_CAPTURE(prefillAttention, smollm2, 9, 3, 64)
    ->ArgsProduct({{512, 2048}, {0, 1}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(prefillAttention, gemma3_270m, 4, 1, 256)
    ->ArgsProduct({{512, 2048}, {0, 1}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(decodeAttention, smollm2, 9, 3, 64, 30)->ArgsProduct({{512, 2048}, {0, 1}, {0, 1}})->UseRealTime();
BENCHMARK_CAPTURE(decodeAttention, gemma3_270m, 4, 1, 256, 18)->ArgsProduct({{512, 2048}, {0, 1}, {0, 1}})->UseRealTime();
BENCHMARK_MAIN();
