// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cli/ServeCommand.h"

#include "kvscope/cli/ProgressOutput.h"
#include "kvscope/serving/ServingSessionSettings.h"

#include "kvscope/cli/CliRunOptions.h"
#include "kvscope/model/LanguageModel.h"
#include "kvscope/model/ModelLoader.h"
#include "kvscope/paged/KvEventsJsonl.h"
#include "kvscope/paged/PagedError.h"
#include "kvscope/paged/ServingOptionTable.h"
#include "kvscope/paged/Workload.h"
#include "kvscope/paged/WorkloadCatalog.h"
#include "kvscope/runtime/ModelSource.h"
#include "kvscope/runtime/RunMetadata.h"
#include "kvscope/serving/ServingLoop.h"
#include "kvscope/trace/SessionWriter.h"

#include <ATen/ATen.h>
#include <CLI/CLI.hpp>
#include <cstdio>
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
            {"prefix_caching_hash_algo", paged::toString(config.hashAlgorithm)},
            {"groups", groups}};
}

} // namespace

CLI::App* ServeCommand::addSubcommand(CLI::App& app, ServeOptions& options) {
    config::RunSettings& settings = options.run;
    if (!settings.serving) {
        settings.serving.emplace();
    }
    CLI::App* serve = app.add_subcommand(
        "serve", "Serve a workload with continuous batching over a paged KV cache; JSON summary on stdout");
    ProgressOutput::addFlag(*serve, options.progress);
    // The serving options are kvscope's too (paged::ServingOptionTable); the model's and sampling's are
    // kvscope-cli run's (config::RunOptionTable).
    for (const config::RunOption& option : paged::ServingOptionTable::options()) {
        CLI::Option* added = CliRunOptions::addOption(*serve, settings, option);
        if (option.name == "workload") {
            added->required();
        }
    }
    for (const char* name : {"preset", "config", "checkpoint", "model", "gguf-weights", "tokenizer", "weight-seed",
                             "device", "cache",
                             "press", "seed", "temperature", "top-k"}) {
        CliRunOptions::addOption(*serve, settings, *config::RunOptionTable::find(name));
    }
    const config::RunOption& compare = paged::ServingOptionTable::compareOption();
    serve
        ->add_option_function<std::string>(
            "--" + compare.name,
            [&options, &compare](const std::string& value) {
                if (const std::string refusal = compare.apply(options.run, value); !refusal.empty()) {
                    throw CLI::ValidationError("--" + compare.name, refusal);
                }
                options.compare = value;
            },
            compare.help)
        ->type_name(compare.valueName);
    // Once every option is read: the pool the workload suggests (docs/workloads.md) for each pool option not
    // given, before --compare-serving's changes apply to it in run().
    serve->final_callback([serve, &settings] {
        if (settings.serving) {
            *settings.serving = paged::ServingOptionTable::withSuggestedPool(
                *settings.serving,
                [serve](std::string_view name) { return serve->count("--" + std::string(name)) > 0; });
        }
    });
    serve->add_option("--out", options.out,
                      "Session file to record, written step by step (sessions/FORMAT.md); with "
                      "--compare-serving the second run's goes beside it (S.compared.kvsess)");
    serve->add_option("--kv-events", options.kvEvents,
                      "Write the pool's prefix-cache events to FILE as vLLM publishes them, one JSON object per "
                      "line (BlockStored, BlockRemoved; with --prefix-caching-hash-algo sha256_cbor and "
                      "--free-policy current a vLLM server's hashes and order)")
        ->type_name("FILE");
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
    case config::CacheKind::LlamaCpp:
        return "--cache llamacpp: llama.cpp's cache is not paged here. Paged blocks hold full-precision keys and "
               "values as vLLM keeps them; serve with --cache dynamic and run llama.cpp's cache with "
               "kvscope-cli run";
    case config::CacheKind::Offloaded:
        return "--cache offloaded: offloading moves one request's layers between device and host; the paged "
               "pools stay on the device; use --cache dynamic";
    }
    return "--cache " + std::string(config::toString(settings.cache.kind)) +
           " is not paged; use --cache dynamic";
}

namespace {

/// One serving run of `workload` over the loaded model with `serving`'s pool; records to `out` when given.
nlohmann::json serveOnce(runtime::ModelSource::Loaded& loaded, const config::RunSettings& settings,
                         const paged::PagedConfig& pagedConfig, const std::filesystem::path& workloadPath,
                         const paged::Workload& workload, const std::string& out, const std::string& kvEvents,
                         std::ostream& progress, bool drawProgress) {
    model::LanguageModel& languageModel = *loaded.model;
    const runtime::TextCodec& text = *loaded.text;
    std::unique_ptr<trace::SessionWriter> session;
    if (!out.empty()) {
        trace::SessionMetadata metadata =
            runtime::RunMetadata::build(loaded, settings, text, {}, runtime::RunMetadata::nowUnixNs());
        metadata.cacheKind = "paged";
        metadata.cacheSettingsJson =
            serving::ServingSessionSettings::describe(pagedConfig, workloadPath, languageModel.architecture()).dump();
        metadata.prompt = workload.description;
        session = std::make_unique<trace::SessionWriter>(out, metadata);
    }
    const serving::SamplingSettings sampling{settings.temperature, settings.topK, settings.seed};
    std::unique_ptr<serving::ServingLoop> serving;
    std::unique_ptr<paged::KvEventsJsonl> eventFile;
    try {
        serving =
            std::make_unique<serving::ServingLoop>(languageModel, text, pagedConfig, sampling, session.get());
        if (!kvEvents.empty()) {
            eventFile = std::make_unique<paged::KvEventsJsonl>(kvEvents);
            serving->setKvEventSink(eventFile.get());
        }
        serving->add(workload);
        while (serving->step()) {
            if (drawProgress) {
                progress << "\rstep " << serving->scheduler().step() << ": "
                         << serving->scheduler().running().size() << " running, "
                         << serving->scheduler().waiting().size() << " waiting   " << std::flush;
            }
        }
        if (drawProgress) {
            progress << "\n" << std::flush;
        }
    } catch (...) {
        // Bad input leaves no file behind.
        serving.reset();
        if (eventFile) {
            eventFile.reset();
            std::filesystem::remove(kvEvents);
        }
        if (session) {
            session.reset();
            std::filesystem::remove(out);
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
    summary["hit_tokens"] = stats.hitTokens;
    summary["query_tokens"] = stats.queryTokens;
    summary["prefix_cache_queries"] = stats.prefixCacheQueries;
    summary["prefix_cache_hits"] = stats.prefixCacheHits;
    summary["evictions"] = stats.evictions;
    summary["preemptions"] = stats.preemptions;
    summary["peak_blocks_used"] = stats.peakBlocksUsed;
    summary["notices"] = loop.notices();
    if (eventFile) {
        summary["kv_events"] = {{"file", kvEvents}, {"events", eventFile->eventsWritten()}};
    }
    if (session) {
        session->finish();
        summary["session"] = {{"file", out},
                              {"bytes", session->bytesWritten()},
                              {"steps", session->stepsWritten()},
                              {"events", session->eventsWritten()}};
    }
    return summary;
}

} // namespace

nlohmann::json ServeCommand::run(const ServeOptions& options, std::ostream& progress) {
    config::RunSettings settings = options.run;
    config::validate(settings);
    if (!settings.serving || settings.serving->workload.empty()) {
        throw paged::PagedError("serve needs a workload: pass --workload with a workload file or a built-in "
                                "workload's name (chat-shared-system-prompt, prefix-caching-example, ...)");
    }
    if (const std::string why = cacheRefusal(settings); !why.empty()) {
        throw paged::PagedError(why);
    }
    const config::ServingSettings& baseline = *settings.serving;
    const paged::PagedConfig pagedConfig = paged::PagedConfig::fromSettings(baseline);
    std::optional<config::ServingSettings> compared;
    if (!options.compare.empty()) {
        auto changed = paged::ServingOptionTable::changed(baseline, options.compare);
        if (const std::string* refusal = std::get_if<std::string>(&changed)) {
            throw paged::PagedError("--compare-serving " + options.compare + ": " + *refusal);
        }
        compared = std::get<config::ServingSettings>(changed);
        paged::PagedConfig::fromSettings(*compared); // refused before anything runs
    }
    const std::filesystem::path workloadPath = paged::WorkloadCatalog::resolve(baseline.workload);
    const paged::Workload workload = paged::Workload::load(workloadPath);

    const at::Device device = model::ModelLoader::device(settings.device);
    runtime::ModelSource::Loaded loaded = runtime::ModelSource::load(settings, device);
    if (const std::string why = serving::PagedModelRunner::refusal(loaded.model->architecture());
        !why.empty()) {
        throw paged::PagedError(why);
    }
    nlohmann::json summary =
        serveOnce(loaded, settings, pagedConfig, workloadPath, workload, options.out, options.kvEvents, progress,
                  options.progress);
    if (!compared) {
        return summary;
    }
    const std::string comparedOut = options.out.empty() ? std::string() : comparedPath(options.out);
    nlohmann::json second = serveOnce(loaded, settings, paged::PagedConfig::fromSettings(*compared),
                                      workloadPath, workload, comparedOut,
                                      options.kvEvents.empty() ? std::string() : comparedPath(options.kvEvents),
                                      progress, options.progress);
    nlohmann::json sideBySide = nlohmann::json::object();
    for (const std::string& key : comparedKeys()) {
        sideBySide[key] = nlohmann::json::array({summary.at(key), second.at(key)});
    }
    return {{"baseline", summary},
            {"compared", second},
            {"changes", options.compare},
            {"compared_label", paged::ServingOptionTable::describeChanges(baseline, *compared)},
            {"side_by_side", sideBySide}};
}

std::string ServeCommand::comparedPath(const std::string& out) {
    const std::filesystem::path path(out);
    return (path.parent_path() / (path.stem().string() + ".compared" + path.extension().string())).string();
}

const std::vector<std::string>& ServeCommand::comparedKeys() {
    static const std::vector<std::string> keys = {"steps",           "prefix_hit_rate", "hit_tokens",
                                                  "query_tokens",    "preemptions",     "evictions",
                                                  "peak_blocks_used"};
    return keys;
}

int ServeCommand::execute(const ServeOptions& options, std::ostream& out, std::ostream& err) {
    const nlohmann::json summary = run(options, err);
    if (summary.contains("side_by_side")) {
        // The two runs side by side for a reader; the JSON on stdout holds the same numbers.
        err << "                    baseline    " << summary.at("compared_label").get<std::string>() << "\n";
        for (const std::string& key : comparedKeys()) {
            const nlohmann::json& pair = summary.at("side_by_side").at(key);
            char line[160];
            if (key == "prefix_hit_rate") {
                std::snprintf(line, sizeof line, "%-18s  %8.1f %%  %8.1f %%\n", key.c_str(),
                              100.0 * pair[0].get<double>(), 100.0 * pair[1].get<double>());
            } else {
                std::snprintf(line, sizeof line, "%-18s  %10lld  %10lld\n", key.c_str(),
                              static_cast<long long>(pair[0].get<std::int64_t>()),
                              static_cast<long long>(pair[1].get<std::int64_t>()));
            }
            err << line;
        }
    }
    out << summary.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
    return 0;
}

} // namespace kvscope::cli
