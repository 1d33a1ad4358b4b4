// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cli/RunCommand.h"

#include "kvscope/cli/ProgressOutput.h"

#include "kvscope/cli/CliRunOptions.h"
#include "kvscope/cli/OptionChecks.h"

#include "kvscope/cache/Cache.h"
#include "kvscope/cache/CacheLayer.h"
#include "kvscope/cache/QuantizedLayer.h"
#include "kvscope/config/ModelConfig.h"
#include "kvscope/config/PressDescriptions.h"
#include "kvscope/config/RunOptionTable.h"
#include "kvscope/model/LanguageModel.h"
#include "kvscope/model/ModelCache.h"
#include "kvscope/runtime/CacheFactory.h"
#include "kvscope/runtime/CachePressHook.h"
#include "kvscope/runtime/ComputeThreads.h"
#include "kvscope/runtime/GenerationError.h"
#include "kvscope/runtime/Generator.h"
#include "kvscope/runtime/LiveSession.h"
#include "kvscope/runtime/TextCodec.h"
#include "kvscope/trace/FanOutSink.h"
#include "kvscope/trace/SessionWriter.h"

#include <ATen/ATen.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <ostream>

namespace kvscope::cli {
namespace {

using Clock = std::chrono::steady_clock;

double millisecondsSince(Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

/// Bytes per layer type ("DynamicSlidingWindowLayer": ...), the total, and the quantized split.
nlohmann::json cacheBytes(const cache::Cache& cache) {
    std::map<std::string, int64_t> byType;
    int64_t total = 0;
    int64_t quantized = 0;
    int64_t residual = 0;
    bool anyQuantized = false;
    for (size_t index = 0; index < cache.size(); ++index) {
        const cache::CacheLayer& layer = cache.layer(index);
        const int64_t bytes = layer.storedBytes();
        byType[layer.typeName()] += bytes;
        total += bytes;
        if (const auto* quantizedLayer = dynamic_cast<const cache::QuantizedLayer*>(&layer)) {
            anyQuantized = true;
            quantized += quantizedLayer->quantizedBytes();
            residual += quantizedLayer->residualBytes();
        }
    }
    nlohmann::json summary{{"type", cache.typeName()}, {"layers", cache.size()}, {"bytes_by_layer_type", byType},
                           {"total_bytes", total}};
    if (anyQuantized) {
        summary["quantized_bytes"] = quantized;
        summary["residual_bytes"] = residual;
    }
    return summary;
}

void drawProgress(std::ostream& progress, int64_t done, int64_t total, double tokensPerSecond) {
    constexpr int64_t width = 30;
    const int64_t filled = total > 0 ? done * width / total : width;
    progress << "\r[" << std::string(static_cast<size_t>(filled), '#')
             << std::string(static_cast<size_t>(width - filled), '.') << "] " << done << "/" << total << " tokens";
    if (tokensPerSecond > 0) {
        progress << ", " << static_cast<int64_t>(tokensPerSecond) << " tok/s";
    }
    progress << std::flush;
}

/// The model, prompt, tokens, text, cache bytes and press of a finished session.
nlohmann::json summaryOf(const runtime::LiveSession& session, const config::RunSettings& settings) {
    const model::LanguageModel& languageModel = session.model();
    const model::Architecture& architecture = languageModel.architecture();
    const runtime::Generator& generator = session.generator();
    const runtime::TextCodec& text = session.text();
    const std::vector<int64_t> tokens = generator.generatedTokens();
    nlohmann::json summary;
    summary["model"] = {{"source", session.source()},
                        {"model_type", architecture.config().modelType},
                        {"layers", architecture.numLayers()},
                        {"pattern", architecture.patternSummary()},
                        {"parameters", languageModel.parameters().parameterCount()}};
    summary["device"] = config::toString(settings.device);
    summary.update(runtime::ComputeThreads::describe()); // "threads" and "blas"
    summary["prompt"] = settings.prompt;
    summary["prompt_tokens"] = session.promptIds().size();
    summary["tokens"] = tokens;
    summary["text"] = text.decode(tokens);
    summary["tokenizer"] = text.name();
    nlohmann::json pieces = nlohmann::json::array();
    for (const int64_t token : tokens) {
        pieces.push_back(text.piece(token));
    }
    summary["pieces"] = pieces;
    summary["new_tokens"] = tokens.size();
    summary["beams"] = settings.beams;
    if (generator.speculative()) {
        // Per verification (step 0: the prefill's): drafted tokens, accepted ones, and the cache's length after
        // the rejected ones were cropped.
        nlohmann::json steps = nlohmann::json::array();
        for (const runtime::SpeculativeStep& step : generator.speculativeSteps()) {
            steps.push_back({{"step", step.step},
                             {"drafted", step.drafted},
                             {"accepted", step.accepted},
                             {"added", step.added},
                             {"cache_length", step.cacheLength}});
        }
        // The prompt's ids too, so that a peer can be fed exactly what kvscope's tokenizer gave.
        const bool assisted = !settings.assistantModel.empty();
        summary[assisted ? "assisted" : "prompt_lookup"] = {
            {"num_tokens", assisted ? settings.numAssistantTokens : settings.promptLookupNumTokens},
            {"steps", steps},
            {"prompt_ids", session.promptIds()}};
    }
    if (settings.beams > 1) {
        summary["beam_scores"] = generator.beamScores();
    }
    nlohmann::json cacheSummary = cacheBytes(generator.cache().selfAttention());
    cacheSummary["kind"] = config::toString(settings.cache.kind);
    if (settings.cache.kind == config::CacheKind::Quantized) {
        const cache::QuantizationSettings quantization =
            runtime::CacheFactory::quantizationSettings(settings.cache, architecture.headDim());
        cacheSummary["quantization"] = {{"backend", config::toString(quantization.backend)},
                                        {"nbits", quantization.nbits},
                                        {"group", quantization.groupSize},
                                        {"residual", quantization.residualLength},
                                        {"axis_key", quantization.axisKey},
                                        {"axis_value", quantization.axisValue}};
    }
    if (settings.cache.kind == config::CacheKind::LlamaCpp) {
        cacheSummary["llamacpp"] = runtime::CacheFactory::describe(settings.cache, architecture.headDim());
    }
    const auto caches = generator.cache().caches();
    if (caches.size() > 1) {
        cacheSummary["cross_attention"] = cacheBytes(*caches[1]);
    }
    summary["cache"] = cacheSummary;
    if (const runtime::CachePressHook* press = session.press()) {
        summary["press"] = RunCommand::pressSummary(*press);
    }
    return summary;
}

} // namespace

CLI::App* RunCommand::addSubcommand(CLI::App& app, RunOptions& options) {
    CLI::App* run = app.add_subcommand("run", "Generate token by token over a KV cache; JSON summary on stdout");
    CliRunOptions::addTo(*run, options.run, config::RunOptionTable::allGroups());
    run->add_option("--out", options.out, "Session file to record, written step by step (sessions/FORMAT.md)");
    run->add_flag("--check", options.check, "Recompute every step without a cache and report the difference");
    ProgressOutput::addFlag(*run, options.progress);
    return run;
}

config::RunSettings RunCommand::settingsOf(const RunOptions& options) {
    config::RunSettings settings = options.run;
    settings.press = pressSettings(options);
    if (!options.promptFile.empty()) {
        // As the command line reads --prompt-file: one reader, one message.
        const std::string refusal =
            config::RunOptionTable::find("prompt-file")->apply(settings, options.promptFile);
        if (!refusal.empty()) {
            throw runtime::GenerationError("--prompt-file: " + refusal);
        }
    }
    config::validate(settings);
    return settings;
}

config::PressSettings RunCommand::pressSettings(const RunOptions& options) {
    config::PressSettings press = options.run.press;
    try {
        for (const auto& [key, value] : OptionChecks::keyValues(options.pressOptions, "--press-option")) {
            press.options[key] = value;
        }
    } catch (const std::invalid_argument& error) {
        throw runtime::GenerationError(error.what());
    }
    if (options.interval > 0) {
        press.options["compression_interval"] = std::to_string(options.interval);
    }
    if (options.targetSize > 0) {
        press.options["target_size"] = std::to_string(options.targetSize);
    }
    return press;
}

nlohmann::json RunCommand::pressSummary(const runtime::CachePressHook& hook) {
    nlohmann::json decisions = nlohmann::json::array();
    for (const runtime::PressDecision& decision : hook.decisions()) {
        nlohmann::json entry = {{"step", decision.step},
                                {"layer", decision.layer},
                                {"before", decision.before},
                                {"after", decision.after}};
        if (decision.masked.defined()) {
            // Batch row 0: the slots each KV head masks (adakv; the cache keeps its length).
            const at::Tensor counts = decision.masked[0].sum(-1).to(at::kLong).contiguous();
            entry["masked_per_head"] =
                std::vector<int64_t>(counts.data_ptr<int64_t>(), counts.data_ptr<int64_t>() + counts.numel());
        }
        if (decision.prunedChannels.defined()) {
            // Batch row 0: the key channels each KV head zeroed (think; every token stays, no bytes saved).
            std::vector<std::vector<int64_t>> channels;
            for (int64_t head = 0; head < decision.prunedChannels.size(1); ++head) {
                const at::Tensor row = decision.prunedChannels[0][head].to(at::kLong).contiguous();
                channels.emplace_back(row.data_ptr<int64_t>(), row.data_ptr<int64_t>() + row.numel());
            }
            entry["pruned_channels_per_head"] = channels;
            if (decision.before == decision.after) {
                entry["bytes_saved"] = 0;
            }
        }
        if (decision.rotaryPositions.defined()) {
            // Batch row 0: each head's kept positions and the positions their keys were re-rotated to.
            std::vector<std::vector<int64_t>> from;
            std::vector<std::vector<int64_t>> to;
            for (int64_t head = 0; head < decision.rotaryPositions.size(1); ++head) {
                const at::Tensor kept = decision.keptPositions[0][head].to(at::kLong).contiguous();
                const at::Tensor rotary = decision.rotaryPositions[0][head].to(at::kLong).contiguous();
                from.emplace_back(kept.data_ptr<int64_t>(), kept.data_ptr<int64_t>() + kept.numel());
                to.emplace_back(rotary.data_ptr<int64_t>(), rotary.data_ptr<int64_t>() + rotary.numel());
            }
            entry["rerotated_from_per_head"] = from;
            entry["rerotated_to_per_head"] = to;
        }
        decisions.push_back(std::move(entry));
    }
    return {{"name", hook.settings().name},
            {"ratio", hook.settings().ratio},
            {"options", hook.settings().options},
            {"compressions", decisions},
            {"notices", hook.notices()}};
}

nlohmann::json RunCommand::run(const RunOptions& options, std::ostream& progress) {
    const config::RunSettings settings = settingsOf(options);
    if (options.check && !settings.press.name.empty()) {
        // A prefill press at ratio 0 changes nothing; any other press hides tokens by design.
        const config::PressDescription& described = config::PressDescriptions::describe(settings.press.name);
        if (described.policy.when != "prefill" || settings.press.ratio > 0.0) {
            throw runtime::GenerationError(
                "--check compares with a cache-free recompute, which attends to every token; press " +
                settings.press.name +
                " hides tokens from attention (presses evict them, adakv masks them per head), so the check "
                "cannot hold: run --check without --press (or with a prefill press at --ratio 0)");
        }
    }
    const auto loadStart = Clock::now();
    runtime::LiveSession session(settings);
    const double loadMs = millisecondsSince(loadStart);

    // The session file is written as the run goes, one chunk per step, so that a crash or kill
    // leaves every finished step readable (sessions/FORMAT.md). It is created once the options
    // have been accepted, and removed if the prefill refuses them, so bad input leaves no file.
    trace::FanOutSink sinks;
    std::unique_ptr<trace::SessionWriter> writer;
    if (!options.out.empty()) {
        writer = std::make_unique<trace::SessionWriter>(options.out, session.metadata());
        sinks.addSink(writer.get());
    }
    double maxDifference = 0.0;
    double checkMs = 0.0;
    auto check = [&] {
        if (!options.check) {
            return;
        }
        const auto start = Clock::now();
        maxDifference = std::max(maxDifference, session.recomputeDifference());
        checkMs += millisecondsSince(start);
    };

    try {
        session.start(sinks);
    } catch (...) {
        if (writer) {
            sinks.removeSink(writer.get());
            writer.reset();
            std::filesystem::remove(options.out);
        }
        throw;
    }
    const double prefillMs = session.lastStepSeconds() * 1000.0;
    check();
    double decodeSeconds = 0.0;
    int64_t decodeSteps = 0;
    if (options.progress) {
        drawProgress(progress, session.generatedCount(), settings.tokens, 0.0);
    }
    while (session.step()) {
        decodeSeconds += session.lastStepSeconds();
        ++decodeSteps;
        check();
        if (options.progress) {
            drawProgress(progress, session.generatedCount(), settings.tokens,
                         decodeSeconds > 0 ? static_cast<double>(decodeSteps) / decodeSeconds : 0.0);
        }
    }
    if (options.progress) {
        progress << "\n" << std::flush;
    }

    nlohmann::json summary = summaryOf(session, settings);
    summary["timings"] = {{"load_ms", loadMs},
                          {"prefill_ms", prefillMs},
                          {"decode_ms", decodeSeconds * 1000.0},
                          {"decode_steps", decodeSteps},
                          {"check_ms", checkMs}};
    summary["tokens_per_second"] = decodeSeconds > 0 ? static_cast<double>(decodeSteps) / decodeSeconds : 0.0;
    if (writer) {
        writer->finish();
        summary["session"] = {{"file", options.out},
                              {"bytes", writer->bytesWritten()},
                              {"steps", writer->stepsWritten()},
                              {"events", writer->eventsWritten()}};
    }
    if (options.check) {
        const double tolerance = runtime::CacheFactory::logitTolerance(settings.cache);
        summary["max_abs_logit_diff"] = maxDifference;
        summary["check_tolerance"] = tolerance;
        summary["check_passed"] = maxDifference <= tolerance;
    }
    return summary;
}

int RunCommand::execute(const RunOptions& options, std::ostream& out, std::ostream& err) {
    const nlohmann::json summary = run(options, err);
    // Generated bytes need not be valid UTF-8: replace what is not rather than fail.
    out << summary.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
    if (options.check && !summary.at("check_passed").get<bool>()) {
        err << "kvscope-cli run: cached logits differ from a cache-free recompute by "
            << summary.at("max_abs_logit_diff").get<double>() << " (tolerance " << summary.at("check_tolerance").get<double>()
            << ")\n";
        return 1;
    }
    return 0;
}

} // namespace kvscope::cli
