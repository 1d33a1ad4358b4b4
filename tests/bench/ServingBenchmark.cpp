// SPDX-License-Identifier: GPL-3.0-or-later
// The cost of paging (issue "Paged KV caches", item 7): one serving step of 8 decoding requests on the llama
// preset (schedule, paged forward of each request, greedy pick, update) against the same 8 requests' solo
// decode steps on dynamic caches (forward, greedy pick), summed. Both are timed over 16 decode steps after
// a 32-token prompt each; the counter s_per_step is the time of one step (one serving step, or the 8 solo
// steps). docs/serving.md records the numbers.
#include "kvscope/model/LanguageModel.h"
#include "kvscope/model/ModelCache.h"
#include "kvscope/paged/PagedConfig.h"
#include "kvscope/runtime/ByteTextCodec.h"
#include "kvscope/runtime/CacheFactory.h"
#include "kvscope/runtime/ModelSource.h"
#include "kvscope/serving/ServingLoop.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>
#include <memory>
#include <vector>

namespace {

using namespace kvscope;

constexpr int64_t kRequests = 8;
constexpr int64_t kPromptTokens = 32;
constexpr int64_t kDecodeSteps = 16;

model::LanguageModel& llama() {
    static runtime::ModelSource::Loaded loaded = [] {
        config::RunSettings settings;
        settings.preset = "llama";
        return runtime::ModelSource::load(settings, at::kCPU);
    }();
    return *loaded.model;
}

std::vector<int64_t> prompt(int64_t request) {
    std::vector<int64_t> ids{256};
    for (int64_t i = 1; i < kPromptTokens; ++i) {
        ids.push_back((request * 53 + i * 7) % 256);
    }
    return ids;
}

void PagedDecodeStepOf8(benchmark::State& state) {
    at::set_num_threads(1);
    model::LanguageModel& model = llama();
    const runtime::ByteTextCodec text;
    paged::PagedConfig config;
    config.blockSize = 16;
    config.numBlocks = 64;
    config.maxNumBatchedTokens = kRequests * kPromptTokens;
    config.maxNumSeqs = kRequests;
    for (auto _ : state) {
        state.PauseTiming();
        auto loop = std::make_unique<serving::ServingLoop>(model, text, config);
        for (int64_t request = 0; request < kRequests; ++request) {
            paged::Request added;
            added.id = "r" + std::to_string(request);
            added.promptIds = prompt(request);
            added.maxTokens = kDecodeSteps + 2;
            added.ignoreEos = true;
            loop->add(std::move(added));
        }
        loop->step(); // every prompt in one step: the steps timed below are pure decode steps of 8
        state.ResumeTiming();
        for (int64_t step = 0; step < kDecodeSteps; ++step) {
            loop->step();
        }
        state.PauseTiming();
        loop.reset();
        state.ResumeTiming();
    }
    state.counters["s_per_step"] =
        benchmark::Counter(static_cast<double>(kDecodeSteps),
                           benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(PagedDecodeStepOf8)->Unit(benchmark::kMillisecond)->MinTime(2.0);

void SoloDecodeStepsOf8Summed(benchmark::State& state) {
    at::set_num_threads(1);
    model::LanguageModel& model = llama();
    for (auto _ : state) {
        state.PauseTiming();
        std::vector<std::unique_ptr<model::ModelCache>> caches;
        std::vector<int64_t> next;
        for (int64_t request = 0; request < kRequests; ++request) {
            caches.push_back(runtime::CacheFactory::create(model, config::CacheSettings{}, 0));
            const at::Tensor logits =
                model.forward(at::tensor(prompt(request), at::kLong).unsqueeze(0), caches.back().get());
            next.push_back(logits[0][-1].argmax().item<int64_t>());
        }
        state.ResumeTiming();
        for (int64_t step = 0; step < kDecodeSteps; ++step) {
            for (int64_t request = 0; request < kRequests; ++request) {
                const at::Tensor logits =
                    model.forward(at::full({1, 1}, next[static_cast<size_t>(request)], at::kLong),
                                  caches[static_cast<size_t>(request)].get());
                next[static_cast<size_t>(request)] = logits[0][-1].argmax().item<int64_t>();
            }
        }
    }
    state.counters["s_per_step"] =
        benchmark::Counter(static_cast<double>(kDecodeSteps),
                           benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(SoloDecodeStepsOf8Summed)->Unit(benchmark::kMillisecond)->MinTime(2.0);

} // namespace

BENCHMARK_MAIN();
