// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cli/ServeCommand.h"

#include "kvscope/cli/OptionChecks.h"
#include "kvscope/model/LanguageModel.h"
#include "kvscope/model/ModelLoader.h"
#include "kvscope/paged/PagedError.h"
#include "kvscope/paged/Workload.h"
#include "kvscope/paged/WorkloadCatalog.h"
#include "kvscope/runtime/ModelSource.h"
#include "kvscope/runtime/RunMetadata.h"
#include "kvscope/serving/ServingLoop.h"
#include "kvscope/trace/SessionWriter.h"

#include <ATen/ATen.h>
#include <CLI/CLI.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <ostream>

namespace kvscope::cli {
namespace {

nlohmann::json pagedConfigJson(const paged::PagedConfig& config) {
    nlohmann::json groups = nlohmann::json::array();
    for (size_t index = 0; index < config.groups.size(); ++index) {
        const paged::LayerGroup& group = config.groups[index];
        groups.push_back({{"group", index},
                          {"kind", paged::toString(group.kind)},
                          {"window", group.window},
                          {"layers", group.layers}});
    }
    return {{"block_size", config.blockSize},
            {"num_blocks", config.numBlocks},
            {"max_num_batched_tokens", config.maxNumBatchedTokens},
            {"max_num_seqs", config.maxNumSeqs},
            {"prefix_caching", config.prefixCaching},
            {"free_policy", paged::toString(config.freePolicy)},
            {"groups", groups}};
}

} // namespace

CLI::App* ServeCommand::addSubcommand(CLI::App& app, ServeOptions& options) {
    config::RunSettings& settings = options.run;
    paged::PagedConfig& paged = options.paged;
    CLI::App* serve = app.add_subcommand(
        "serve", "Serve a workload with continuous batching over a paged KV cache; JSON summary on stdout");
    serve
        ->add_option("--workload", options.workload,
                     "A workload file (docs/workloads.md) or a built-in workload's name")
        ->required();
    CLI::Option* preset =
        serve->add_option("--preset", settings.preset, "Built-in model preset (kvscope-cli presets)");
    CLI::Option* configPath =
        serve->add_option("--config", settings.configPath, "A Hugging Face config.json (built-in weights)");
    CLI::Option* checkpoint = serve->add_option("--checkpoint", settings.checkpointDir,
                                                "A folder with config.json and *.safetensors");
    preset->excludes(configPath)->excludes(checkpoint);
    configPath->excludes(checkpoint);
    serve->add_option("--tokenizer", settings.tokenizerPath, "A tokenizer for --preset or --config")
        ->excludes(checkpoint);
    serve
        ->add_option("--weight-seed", settings.weightSeed,
                     "Seed of the built-in weights (presets and --config)")
        ->check(OptionChecks::integerAtLeast(0));
    OptionChecks::addEnum(*serve, "--device", settings.device, &config::computeDeviceFromString,
                          config::allowedComputeDevices(), "Device");
    OptionChecks::addEnum(*serve, "--cache", settings.cache.kind, &config::cacheKindFromString,
                          config::allowedCacheKinds(),
                          "Cache kind: only full-precision (dynamic) caches are paged");
    serve->add_option("--press", settings.press.name, "Cache press: refused (presses are not paged)");
    serve->add_option("--block-size", paged.blockSize, "Token slots per block")
        ->check(OptionChecks::integerAtLeast(1));
    serve->add_option("--num-blocks", paged.numBlocks, "Blocks in the pool")
        ->check(OptionChecks::integerAtLeast(1));
    serve->add_option("--max-num-batched-tokens", paged.maxNumBatchedTokens, "A step's token budget")
        ->check(OptionChecks::integerAtLeast(1));
    serve->add_option("--max-num-seqs", paged.maxNumSeqs, "Most requests running at once")
        ->check(OptionChecks::integerAtLeast(1));
    serve->add_flag("!--no-prefix-caching", paged.prefixCaching, "Do not share cached prompt blocks");
    OptionChecks::addEnum(*serve, "--free-policy", paged.freePolicy, &paged::freePolicyFromString,
                          "document, current",
                          "Where freed blocks go: vLLM's design document, or its code today (null block 0, "
                          "uncached blocks to the head)");
    serve->add_option("--seed", settings.seed, "Sampling seed (each request samples with its own generator)")
        ->check(OptionChecks::integerAtLeast(0));
    serve->add_option("--temperature", settings.temperature, "Sampling temperature (0 = greedy)")
        ->check(OptionChecks::numberAtLeast(0.0));
    serve->add_option("--top-k", settings.topK, "Sample among the k most likely tokens (0 = all)")
        ->check(OptionChecks::integerAtLeast(0));
    serve->add_option("--out", options.out,
                      "Session file to record, written step by step (sessions/FORMAT.md)");
    return serve;
}

std::string ServeCommand::cacheRefusal(const config::RunSettings& settings) {
    if (!settings.press.name.empty()) {
        return "--press " + settings.press.name +
               ": presses are not paged. A press removes tokens from one request's cache, but paged blocks "
               "are "
               "shared between requests by prefix hash and block tables are append-only, so dropping a token "
               "from a shared block would change every request holding it; run presses with kvscope-cli run";
    }
    switch (settings.cache.kind) {
    case config::CacheKind::Dynamic:
        return "";
    case config::CacheKind::Quantized:
        return "--cache quantized: quantized caches are not paged. Paged blocks hold full-precision keys and "
               "values; a quantized cache keeps a per-request full-precision residual that it flushes into "
               "quantized groups, which has no block layout here; serve with --cache dynamic (the default)";
    case config::CacheKind::Static:
        return "--cache static: a static cache preallocates one request's whole length; paged serving "
               "allocates "
               "blocks as requests grow instead (size the pool with --num-blocks); use --cache dynamic";
    case config::CacheKind::Offloaded:
        return "--cache offloaded: offloading moves one request's layers between device and host; the paged "
               "pools stay on the device; use --cache dynamic";
    }
    return "--cache " + std::string(config::toString(settings.cache.kind)) +
           " is not paged; use --cache dynamic";
}

nlohmann::json ServeCommand::run(const ServeOptions& options, std::ostream& progress) {
    config::RunSettings settings = options.run;
    config::validate(settings);
    if (const std::string why = cacheRefusal(settings); !why.empty()) {
        throw paged::PagedError(why);
    }
    options.paged.validate();
    const std::filesystem::path workloadPath = paged::WorkloadCatalog::resolve(options.workload);
    const paged::Workload workload = paged::Workload::load(workloadPath);

    const at::Device device = model::ModelLoader::device(settings.device);
    runtime::ModelSource::Loaded loaded = runtime::ModelSource::load(settings, device);
    model::LanguageModel& languageModel = *loaded.model;
    if (const std::string why = serving::PagedModelRunner::refusal(languageModel.architecture());
        !why.empty()) {
        throw paged::PagedError(why);
    }
    const runtime::TextCodec& text = *loaded.text;

    std::unique_ptr<trace::SessionWriter> session;
    if (!options.out.empty()) {
        trace::SessionMetadata metadata =
            runtime::RunMetadata::build(loaded, settings, text, {}, runtime::RunMetadata::nowUnixNs());
        metadata.cacheKind = "paged";
        nlohmann::json described = pagedConfigJson(options.paged);
        described["kind"] = "paged";
        described["workload"] = workloadPath.string();
        metadata.cacheSettingsJson = described.dump();
        metadata.prompt = workload.description;
        session = std::make_unique<trace::SessionWriter>(options.out, metadata);
    }
    const serving::SamplingSettings sampling{settings.temperature, settings.topK, settings.seed};
    std::unique_ptr<serving::ServingLoop> serving;
    try {
        serving = std::make_unique<serving::ServingLoop>(languageModel, text, options.paged, sampling,
                                                         session.get());
        serving->add(workload);
        while (serving->step()) {
            progress << "\rstep " << serving->scheduler().step() << ": "
                     << serving->scheduler().running().size() << " running, "
                     << serving->scheduler().waiting().size() << " waiting   " << std::flush;
        }
        progress << "\n" << std::flush;
    } catch (...) {
        // Bad input leaves no file behind.
        serving.reset();
        if (session) {
            session.reset();
            std::filesystem::remove(options.out);
        }
        throw;
    }
    const serving::ServingLoop& loop = *serving;

    const paged::PagedConfig& config = loop.config();
    nlohmann::json requests = nlohmann::json::array();
    for (const paged::Request* request : loop.scheduler().requests()) {
        nlohmann::json tables = nlohmann::json::array();
        for (const auto& table : request->finalBlockTables) {
            tables.push_back(table);
        }
        requests.push_back({{"id", request->id},
                            {"prompt_tokens", request->numPromptTokens()},
                            {"cached_tokens", request->cachedTokens},
                            {"output_ids", request->outputIds},
                            {"text", text.decode(request->outputIds)},
                            {"block_table", tables},
                            {"preemptions", request->preemptions},
                            {"first_token_step", request->firstTokenStep},
                            {"finished_step", request->finishedStep}});
    }
    const paged::SchedulerStats stats = loop.scheduler().stats();
    nlohmann::json summary;
    summary["model"] = {{"source", loaded.source},
                        {"model_type", languageModel.architecture().config().modelType},
                        {"layers", languageModel.architecture().numLayers()},
                        {"pattern", languageModel.architecture().patternSummary()}};
    summary["device"] = config::toString(settings.device);
    summary["tokenizer"] = text.name();
    summary["workload"] = {{"file", workloadPath.string()}, {"description", workload.description}};
    summary["paged"] = pagedConfigJson(config);
    summary["pool_bytes"] = loop.runner().pools().bytes();
    summary["requests"] = requests;
    summary["steps"] = loop.scheduler().step();
    summary["prefix_hit_rate"] = stats.prefixHitRate();
    summary["evictions"] = stats.evictions;
    summary["preemptions"] = stats.preemptions;
    summary["peak_blocks_used"] = stats.peakBlocksUsed;
    summary["notices"] = loop.notices();
    if (session) {
        session->finish();
        summary["session"] = {{"file", options.out},
                              {"bytes", session->bytesWritten()},
                              {"steps", session->stepsWritten()},
                              {"events", session->eventsWritten()}};
    }
    return summary;
}

int ServeCommand::execute(const ServeOptions& options, std::ostream& out, std::ostream& err) {
    const nlohmann::json summary = run(options, err);
    out << summary.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
    return 0;
}

} // namespace kvscope::cli
