// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cli/PressBenchmark.h"

#include "kvscope/runtime/ComputeThreads.h"
#include "kvscope/cli/OptionChecks.h"
#include "kvscope/config/PressDescriptions.h"
#include "kvscope/press/PressCatalog.h"
#include "kvscope/press/PressWorkload.h"
#include "kvscope/press/TopKSelection.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <functional>
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

std::string phaseOf(const std::string& name) {
    const config::PressDescription* description = config::PressDescriptions::find(name);
    if (description == nullptr) {
        throw std::invalid_argument("unknown press `" + name + "` (allowed: " + config::PressDescriptions::allowedNames() + ")");
    }
    return description->phase;
}

/// A prefill press over the whole prompt, then the layer's prefill attention once (it dwarfs the noise).
void timePrefill(const PressBenchmarkOptions& options, const std::map<std::string, std::string>& pressOptions,
                 const press::PressWorkload& workload, nlohmann::json& result) {
    if (options.press == "adakv") {
        const press::AdaKvPress adaKv = press::PressCatalog::adaKv(pressOptions);
        const press::PressInputs inputs =
            adaKv.base().reads().attentions ? workload.inputsWithAttentions() : workload.inputs();
        int64_t kept = 0;
        result["compression_ms"] = medianMilliseconds(options.repeats, [&] {
            kept = adaKv.mask(inputs, options.ratio).keptCount;
        });
        result["kept"] = kept;
    } else {
        const std::shared_ptr<const press::Press> scorer = press::PressCatalog::scorer(options.press, pressOptions);
        const press::PressInputs inputs = scorer->reads().attentions ? workload.inputsWithAttentions() : workload.inputs();
        int64_t kept = 0;
        result["compression_ms"] = medianMilliseconds(options.repeats, [&] {
            const press::PressSelection selection = scorer->select(inputs, options.ratio);
            press::TopKSelection::gather(inputs.keys, selection.keptIndices);
            press::TopKSelection::gather(inputs.values, selection.keptIndices);
            kept = selection.keptCount;
        });
        result["kept"] = kept;
    }
    const double attention = millisecondsOf([&] { workload.prefillAttention(); });
    result["attention_ms"] = attention;
    result["share_of_attention"] = result["compression_ms"].get<double>() / attention;
}

/// DecodingPress over one compression interval starting at its target size; H2O over `repeats` steps at
/// its budget. Each against the layer's decode step at that cache size.
void timeDecoding(const PressBenchmarkOptions& options, std::map<std::string, std::string> pressOptions,
                  nlohmann::json& result) {
    const press::PressWorkloadShape shape{options.heads, options.keyValueHeads, options.headDim};
    int64_t steps = 0;
    int64_t compressions = 0;
    int64_t cached = 0;
    double pressMs = 0.0;
    if (options.press == "decoding") {
        pressOptions.emplace("target_size", std::to_string(options.tokens));
        press::DecodingPress decoding = press::PressCatalog::decoding(pressOptions);
        if (decoding.base().reads().attentions) {
            throw std::invalid_argument("decoding over " + decoding.base().name() +
                                        " reads attention weights, which a decoding pass does not give");
        }
        const int64_t target = decoding.targetSize();
        steps = decoding.compressionInterval();
        cached = target;
        const press::PressWorkload workload(target + steps, shape);
        std::vector<press::PressInputs> passes;
        for (int64_t step = 1; step <= steps; ++step) {
            passes.push_back(workload.decodingPass(target + step));
        }
        pressMs = millisecondsOf([&] {
            for (const press::PressInputs& pass : passes) {
                if (decoding.append(pass, 1)) {
                    decoding.compress(pass);
                    ++compressions;
                }
            }
        });
        result["decode_step_ms"] = medianMilliseconds(options.repeats, [&] { workload.decodeStepAttention(target); });
    } else {
        press::H2oPress h2o = press::PressCatalog::h2o(pressOptions);
        cached = h2o.budget();
        steps = std::max<int64_t>(options.repeats, 1);
        const press::PressWorkload workload(cached + 1, shape);
        // The prefill pass fills the budget; each decode pass then adds one slot that H2O evicts again.
        const at::Tensor prefill = workload.inputsWithAttentions().attentions.narrow(2, 0, cached).narrow(3, 0, cached);
        h2o.step(0, prefill, options.keyValueHeads);
        const at::Tensor decode = at::softmax(at::randn({1, options.heads, 1, cached + 1}), -1);
        pressMs = millisecondsOf([&] {
            for (int64_t step = 0; step < steps; ++step) {
                compressions += h2o.step(0, decode, options.keyValueHeads).defined() ? 1 : 0;
            }
        });
        result["decode_step_ms"] = medianMilliseconds(options.repeats, [&] { workload.decodeStepAttention(cached); });
    }
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
    const std::map<std::string, std::string> pressOptions = OptionChecks::keyValues(options.pressOptions, "--press-option");
    const std::string phase = phaseOf(options.press);
    nlohmann::json result = {{"press", options.press}, {"phase", phase}, {"tokens", options.tokens},
                             {"heads", options.heads}, {"kv_heads", options.keyValueHeads},
                             {"head_dim", options.headDim}};
    result.update(runtime::ComputeThreads::describe());
    const press::PressWorkloadShape shape{options.heads, options.keyValueHeads, options.headDim};
    if (phase == "decoding") {
        timeDecoding(options, pressOptions, result);
    } else {
        result["ratio"] = options.ratio;
        timePrefill(options, pressOptions, press::PressWorkload(options.tokens, shape), result);
    }
    return result;
}

} // namespace kvscope::cli
