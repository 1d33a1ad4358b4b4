// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cli/PressBenchmark.h"

#include "kvscope/cli/OptionChecks.h"
#include "kvscope/config/PressDescriptions.h"
#include "kvscope/press/PressCatalog.h"
#include "kvscope/press/PressWorkload.h"
#include "kvscope/press/WorkloadPressRun.h"
#include "kvscope/runtime/ComputeThreads.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <algorithm>
#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace kvscope::cli {

namespace {

using Clock = std::chrono::steady_clock;

double millisecondsOf(const std::function<void()>& work) {
    const auto start = Clock::now();
    work();
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    const size_t middle = values.size() / 2;
    return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2.0;
}

double medianMilliseconds(int64_t repeats, const std::function<void()>& work) {
    std::vector<double> times;
    for (int64_t repeat = 0; repeat < repeats; ++repeat) {
        times.push_back(millisecondsOf(work));
    }
    return median(times);
}

/// Tokens a press decision keeps per head: the kept slots, every slot for a key rewrite, the unmasked
/// slots per head on average for a mask (AdaKV's heads keep different numbers; their mean is int(T (1 - r))).
int64_t keptOf(const press::PressAction& action, int64_t length) {
    if (action.kept.defined()) {
        return action.kept.size(2);
    }
    if (action.masked.defined()) {
        const int64_t heads = action.masked.size(0) * action.masked.size(1);
        return (heads * length - action.masked.sum().item<int64_t>()) / heads;
    }
    return length;
}

/// A prefill press over the whole prompt (its decision and the gathering of the kept keys and values; the
/// inputs, attention weights included, are the model's work and built once), then the layer's prefill
/// attention once (it dwarfs the noise).
void timePrefill(const PressBenchmarkOptions& options, const config::PressSettings& settings,
                 const press::PressWorkload& workload, nlohmann::json& result) {
    press::WorkloadPressRun prefilled(workload, press::PressCatalog::generation(settings), settings.ratio);
    const press::PressInputs inputs = prefilled.prefill(workload.tokens());
    int64_t kept = 0;
    std::vector<double> times;
    for (int64_t repeat = 0; repeat < options.repeats; ++repeat) {
        press::WorkloadPressRun run = prefilled.withPress(press::PressCatalog::generation(settings));
        times.push_back(millisecondsOf([&] { kept = keptOf(run.decide(inputs), workload.tokens()); }));
    }
    result["compression_ms"] = median(times);
    result["kept"] = kept;
    const double attention = millisecondsOf([&] { workload.prefillAttention(); });
    result["attention_ms"] = attention;
    result["share_of_attention"] = result["compression_ms"].get<double>() / attention;
}

/// A decoding press per decode step at the cache size it holds (its target_size or budget, --tokens unless
/// given), over one compression interval where it has one, else `repeats` steps; next to the layer's decode
/// step at that size. The prefill and each pass's inputs are built outside the timing.
void timeDecoding(const PressBenchmarkOptions& options, config::PressSettings settings,
                  nlohmann::json& result) {
    settings.options = press::WorkloadPressRun::holdingAt(settings.name, settings.options, options.tokens);
    int64_t cached = options.tokens;
    int64_t steps = std::max<int64_t>(options.repeats, 1);
    for (const config::PressOption& option : config::PressDescriptions::describe(settings.name).options) {
        const std::string value = config::PressDescriptions::optionValue(settings, option.name);
        if (option.name == "target_size" || option.name == "budget") {
            cached = std::stoll(value);
        } else if (option.name == "compression_interval") {
            steps = std::stoll(value);
        }
    }
    const press::PressWorkloadShape shape{options.heads, options.keyValueHeads, options.headDim};
    const press::PressWorkload workload(cached + steps, shape);
    press::WorkloadPressRun run(workload, press::PressCatalog::generation(settings), settings.ratio);
    run.decide(run.prefill(cached));
    int64_t compressions = 0;
    double pressMs = 0.0;
    for (int64_t step = 0; step < steps; ++step) {
        const press::PressInputs inputs = run.next();
        pressMs += millisecondsOf([&] { compressions += run.decide(inputs).acted() ? 1 : 0; });
    }
    result["decode_step_ms"] =
        medianMilliseconds(options.repeats, [&] { workload.decodeStepAttention(cached); });
    result["steps"] = steps;
    result["cached"] = cached;
    result["compressions"] = compressions;
    result["press_ms_per_step"] = pressMs / static_cast<double>(steps);
    result["share_of_decode_step"] = result["press_ms_per_step"].get<double>() / result["decode_step_ms"].get<double>();
}

} // namespace

CLI::App* PressBenchmark::addSubcommand(CLI::App& bench, PressBenchmarkOptions& options) {
    CLI::App* command = bench.add_subcommand("press", "Time a cache press on one synthetic layer against its attention");
    command->add_option("--press", options.press, "Press to time (kvscope-cli presses)");
    command->add_option("--ratio", options.ratio, "Share of the prompt a prefill press removes, in [0, 1)")
        ->check(OptionChecks::numberAtLeast(0.0));
    command->add_option("--press-option", options.pressOptions, "key=value press option (repeatable)");
    command->add_option("--tokens", options.tokens, "Prompt tokens (a decoding press's target size by default)")
        ->check(OptionChecks::integerAtLeast(2));
    command->add_option("--heads", options.heads, "Query heads")->check(OptionChecks::integerAtLeast(1));
    command->add_option("--kv-heads", options.keyValueHeads, "KV heads")->check(OptionChecks::integerAtLeast(1));
    command->add_option("--head-dim", options.headDim, "Head dimension (even)")->check(OptionChecks::integerAtLeast(2));
    command->add_option("--repeats", options.repeats, "Timed repeats (median) or H2O steps")
        ->check(OptionChecks::integerAtLeast(1));
    command->add_option("--threads", options.threads, "CPU threads")->check(OptionChecks::integerAtLeast(1));
    return command;
}

nlohmann::json PressBenchmark::run(const PressBenchmarkOptions& options) {
    if (!(options.ratio >= 0.0 && options.ratio < 1.0)) {
        throw std::invalid_argument("--ratio " + std::to_string(options.ratio) + " is outside [0, 1)");
    }
    // One thread by default: the per-update cost, not the machine's width (LibTorch's and the BLAS's).
    runtime::ComputeThreads::apply(options.threads);
    const config::PressSettings settings{options.press, options.ratio,
                                         OptionChecks::keyValues(options.pressOptions, "--press-option")};
    press::PressCatalog::factory(options.press); // an unknown press is refused, naming the allowed ones
    const std::string phase = config::PressDescriptions::describe(options.press).phase;
    nlohmann::json result = {{"press", options.press}, {"phase", phase}, {"tokens", options.tokens},
                             {"heads", options.heads}, {"kv_heads", options.keyValueHeads},
                             {"head_dim", options.headDim}};
    result.update(runtime::ComputeThreads::describe());
    const press::PressWorkloadShape shape{options.heads, options.keyValueHeads, options.headDim};
    if (phase == "decoding") {
        timeDecoding(options, settings, result);
    } else {
        result["ratio"] = options.ratio;
        timePrefill(options, settings, press::PressWorkload(options.tokens, shape), result);
    }
    return result;
}

} // namespace kvscope::cli
