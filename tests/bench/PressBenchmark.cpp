// SPDX-License-Identifier: GPL-3.0-or-later
// Every registered press against the work it saves, on press::PressWorkload's layer (8 query heads, 2 KV
// heads, head dim 64; the one `kvscope-cli bench press` times), each built by its registration
// (PressCatalog::generation) and applied as a generation applies it (press::WorkloadPressRun):
// - PressPrefillCompression/<press>/4096: a prefill press's decision on a 4096-token prompt at ratio 0.5,
//   the kept keys and values gathered, next to PrefillAttention/4096, that layer's prefill attention;
// - PressDecodingPerStep/<press>: a decoding press over 512 one-token passes of a layer it holds at 4096
//   tokens (its target_size or budget; DecodingPress compresses once), per step, next to
//   DecodeStepAttention/4096, the layer's own decode step.
// The registry is the list: a press added to engine/presses/ is benchmarked without an edit here.
#include "kvscope/config/PressDescriptions.h"
#include "kvscope/press/PressCatalog.h"
#include "kvscope/press/PressWorkload.h"
#include "kvscope/press/WorkloadPressRun.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>
#include <map>
#include <string>

namespace {

using namespace kvscope;

constexpr int64_t kPrompt = 4096;
constexpr int64_t kDecodingPasses = 512;

/// The prefill's inputs are the model's work, not the press's: built once, outside the timing.
void PressPrefillCompression(benchmark::State& state, const std::string& name) {
    at::set_num_threads(1);
    const press::PressWorkload workload(kPrompt);
    const config::PressSettings settings{name, 0.5, {}};
    press::WorkloadPressRun prefilled(workload, press::PressCatalog::generation(settings), settings.ratio);
    const press::PressInputs inputs = prefilled.prefill(kPrompt);
    for (auto _ : state) {
        state.PauseTiming();
        press::WorkloadPressRun run = prefilled.withPress(press::PressCatalog::generation(settings));
        state.ResumeTiming();
        benchmark::DoNotOptimize(run.decide(inputs).kept);
    }
}

void PrefillAttention(benchmark::State& state) {
    at::set_num_threads(1);
    const press::PressWorkload workload(state.range(0));
    for (auto _ : state) {
        benchmark::DoNotOptimize(workload.prefillAttention());
    }
}

/// The layer's own work in one decode step at a 4096-token cache: what PressDecodingPerStep is measured
/// against.
void DecodeStepAttention(benchmark::State& state) {
    at::set_num_threads(1);
    const int64_t tokens = state.range(0);
    const press::PressWorkload workload(tokens + 1);
    for (auto _ : state) {
        benchmark::DoNotOptimize(workload.decodeStepAttention(tokens));
    }
}

/// The prefill (untimed) fills the cache to 4096 tokens; each decoding pass's inputs are built untimed too.
void PressDecodingPerStep(benchmark::State& state, const std::string& name) {
    at::set_num_threads(1);
    const press::PressWorkload workload(kPrompt + kDecodingPasses);
    std::map<std::string, std::string> options = press::WorkloadPressRun::holdingAt(name, {}, kPrompt);
    for (const config::PressOption& option : config::PressDescriptions::describe(name).options) {
        if (option.name == "compression_interval") {
            options.emplace(option.name, std::to_string(kDecodingPasses)); // DecodingPress compresses once
        }
    }
    const config::PressSettings settings{name, 0.0, options};
    for (auto _ : state) {
        state.PauseTiming();
        press::WorkloadPressRun run(workload, press::PressCatalog::generation(settings), settings.ratio);
        run.decide(run.prefill(kPrompt));
        for (int64_t pass = 0; pass < kDecodingPasses; ++pass) {
            const press::PressInputs inputs = run.next();
            state.ResumeTiming();
            benchmark::DoNotOptimize(run.decide(inputs).kept);
            state.PauseTiming();
        }
        state.ResumeTiming();
    }
    state.SetItemsProcessed(state.iterations() * kDecodingPasses);
}

} // namespace

int main(int argc, char** argv) {
    for (const config::PressDescription& press : config::PressDescriptions::all()) {
        if (press.phase == "decoding") {
            // Each iteration is 512 passes after a 4096-token prefill (H2O's reads its attention weights):
            // two are enough for a mean.
            benchmark::RegisterBenchmark(("PressDecodingPerStep/" + press.name).c_str(), PressDecodingPerStep,
                                         press.name)
                ->Unit(benchmark::kMillisecond)
                ->Iterations(2);
        } else {
            benchmark::RegisterBenchmark(("PressPrefillCompression/" + press.name + "/4096").c_str(),
                                         PressPrefillCompression, press.name)
                ->Unit(benchmark::kMillisecond);
        }
    }
    benchmark::RegisterBenchmark("PrefillAttention", PrefillAttention)
        ->Arg(kPrompt)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("DecodeStepAttention", DecodeStepAttention)
        ->Arg(kPrompt)
        ->Unit(benchmark::kMillisecond);
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
        return 1;
    }
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
