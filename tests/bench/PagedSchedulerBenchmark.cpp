// SPDX-License-Identifier: GPL-3.0-or-later
// Paged bookkeeping cost (docs/paged.md): one scheduler step (schedule + update, block tables, hashes,
// free queue) of N decoding requests, with and without an event sink, across pool sizes. Bookkeeping is
// O(blocks touched): the time per step must not grow with the pool. Counter: steps/s.
#include "kvscope/paged/Scheduler.h"
#include "kvscope/trace/EventEmitter.h"
#include "kvscope/trace/EventSink.h"

#include <benchmark/benchmark.h>
#include <memory>
#include <numeric>

namespace {

using namespace kvscope::paged;

/// Counts events, as cheaply as a sink can, so that the benchmark measures building them.
class CountingSink final : public kvscope::trace::EventSink {
public:
    void emit(const kvscope::trace::Event&) override { ++m_count; }
    std::size_t count() const { return m_count; }

private:
    std::size_t m_count = 0;
};

struct Run {
    std::unique_ptr<CountingSink> sink;
    std::unique_ptr<kvscope::trace::EventEmitter> emitter;
    std::unique_ptr<Scheduler> scheduler;
    std::vector<TokenId> sampled;
};

/// requests decoding requests with 64-token prompts (sharing the first 32) on a pool of numBlocks blocks of
/// 16, past their prefill.
Run start(std::int32_t requests, std::int32_t numBlocks, bool record) {
    Run run;
    PagedConfig config;
    config.blockSize = 16;
    config.numBlocks = numBlocks;
    config.maxNumBatchedTokens = 64 * requests;
    config.maxNumSeqs = requests;
    if (record) {
        run.sink = std::make_unique<CountingSink>();
        run.emitter = std::make_unique<kvscope::trace::EventEmitter>(run.sink.get());
    }
    run.scheduler = std::make_unique<Scheduler>(config, run.emitter.get());
    for (std::int32_t r = 0; r < requests; ++r) {
        Request request;
        request.id = "r" + std::to_string(r);
        request.promptIds.resize(64);
        std::iota(request.promptIds.begin(), request.promptIds.end(), 1);
        std::iota(request.promptIds.begin() + 32, request.promptIds.end(), 1000 * (r + 1));
        request.maxTokens = 1 << 30;
        request.ignoreEos = true;
        run.scheduler->addRequest(std::move(request));
    }
    run.sampled.assign(static_cast<std::size_t>(requests), 7);
    const SchedulerOutput prefill = run.scheduler->schedule();
    run.scheduler->update(prefill, run.sampled);
    return run;
}

void BM_PagedDecodeStep(benchmark::State& state) {
    const auto requests = static_cast<std::int32_t>(state.range(0));
    const auto numBlocks = static_cast<std::int32_t>(state.range(1));
    const bool record = state.range(2) != 0;
    Run run = start(requests, numBlocks, record);
    std::int64_t steps = 0;
    for (auto _ : state) {
        // A new block per request every 16 steps: start over before the pool runs dry (not timed).
        if (run.scheduler->cacheManager().pool().numFreeBlocks() < 2 * requests) {
            state.PauseTiming();
            run = start(requests, numBlocks, record);
            state.ResumeTiming();
        }
        const SchedulerOutput output = run.scheduler->schedule();
        run.scheduler->update(output, run.sampled);
        benchmark::DoNotOptimize(output.requests.data());
        ++steps;
    }
    state.counters["steps/s"] = benchmark::Counter(static_cast<double>(steps), benchmark::Counter::kIsRate);
}

} // namespace

// {decoding requests, pool blocks, record events}
BENCHMARK(BM_PagedDecodeStep)
    ->Args({8, 1024, 0})
    ->Args({8, 16384, 0})
    ->Args({8, 262144, 0})
    ->Args({8, 1024, 1})
    ->Args({64, 16384, 0})
    ->Args({256, 65536, 0})
    ->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
