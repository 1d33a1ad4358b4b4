// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cli/FidelityCommand.h"

#include "kvscope/cli/CliRunOptions.h"
#include "kvscope/config/ComputeDevice.h"
#include "kvscope/config/PressDescriptions.h"
#include "kvscope/model/LanguageModel.h"
#include "kvscope/model/ModelLoader.h"
#include "kvscope/runtime/CacheFactory.h"
#include "kvscope/runtime/ComputeThreads.h"
#include "kvscope/runtime/FidelityReference.h"
#include "kvscope/runtime/GenerationError.h"
#include "kvscope/runtime/ModelSource.h"
#include "kvscope/runtime/PressFidelity.h"
#include "kvscope/runtime/TextCodec.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>

namespace kvscope::cli {

CLI::App* FidelityCommand::addSubcommand(CLI::App& app, FidelityOptions& options) {
    CLI::App* command = app.add_subcommand(
        "fidelity", "KL divergence and top-1 agreement of a press against no press, token by token; JSON on stdout");
    // Greedy by design: the model, cache and press options of a run, no decoding ones.
    CliRunOptions::addTo(*command, options.run.run,
                         {config::RunOption::Group::Model, config::RunOption::Group::Press});
    CLI::Option* save = command->add_option("--save-reference", options.saveReference,
                                            "write the uncompressed run (tokens and log-probabilities) to "
                                            "FILE, for --reference; without --press, only that");
    CLI::Option* reference = command->add_option("--reference", options.reference,
                                                 "measure against the uncompressed run saved in FILE by "
                                                 "--save-reference with the same model, prompt, tokens, "
                                                 "cache and device, instead of recomputing it");
    save->excludes(reference);
    return command;
}

nlohmann::json FidelityCommand::run(const FidelityOptions& options) {
    const config::RunSettings settings = RunCommand::settingsOf(options.run);
    const config::PressSettings& press = settings.press;
    // Without a press, a cache that changes what attention reads (quantized, llamacpp) is measured against the
    // full-precision dynamic cache; with one, the press against no press on the same cache.
    const bool cacheAlone = press.name.empty() && (settings.cache.kind == config::CacheKind::Quantized ||
                                                   settings.cache.kind == config::CacheKind::LlamaCpp);
    if (press.name.empty() && !cacheAlone && options.saveReference.empty()) {
        throw runtime::GenerationError("fidelity compares a press against no press, or a quantising cache against "
                                       "the dynamic cache: give --press NAME (" +
                                       config::PressDescriptions::allowedNames() +
                                       "), --cache quantized or --cache llamacpp, or --save-reference FILE to save "
                                       "the uncompressed run alone");
    }
    const config::CacheSettings referenceCache = cacheAlone ? config::CacheSettings{} : settings.cache;
    runtime::ComputeThreads::apply(config::computeThreads(settings));
    runtime::ModelSource::Loaded loaded = runtime::ModelSource::load(settings, model::ModelLoader::device(settings.device));
    const std::vector<int64_t> prompt =
        settings.chat ? loaded.text->encodeChat(settings.prompt) : loaded.text->encode(settings.prompt);
    // What a saved reference must have been made with (the weights' digest reads every parameter: only
    // computed when a file is involved).
    const auto origin = [&] {
        return runtime::FidelityReference::Origin{
            loaded.source.dump(), runtime::PressFidelity::weightsDigest(*loaded.model),
            runtime::CacheFactory::describe(referenceCache, loaded.model->architecture().headDim()).dump(),
            std::string(config::toString(settings.device))};
    };
    if (!press.name.empty()) {
        runtime::PressFidelity::check(*loaded.model, settings.cache, press); // refuse before the long part
    }
    runtime::FidelityReference reference;
    if (!options.reference.empty()) {
        reference = runtime::FidelityReference::read(options.reference);
        reference.checkMadeFor(prompt, settings.tokens, origin(),
                               "fidelity reference `" + options.reference + "`");
    } else {
        reference = runtime::PressFidelity::reference(*loaded.model, referenceCache, prompt, settings.tokens);
        reference.origin = options.saveReference.empty() ? runtime::FidelityReference::Origin{} : origin();
    }
    if (!options.saveReference.empty()) {
        reference.write(options.saveReference);
        if (press.name.empty() && !cacheAlone) {
            return {{"model", loaded.source},
                    {"prompt_tokens", prompt.size()},
                    {"tokens", reference.tokens.size()},
                    {"reference", options.saveReference},
                    {"text", loaded.text->decode(reference.tokens)}};
        }
    }
    const runtime::FidelityResult result =
        runtime::PressFidelity::measure(*loaded.model, settings.cache, reference, press);
    std::set<int64_t> compressed;
    for (const runtime::PressDecision& decision : result.decisions) {
        compressed.insert(decision.layer);
    }
    nlohmann::json summary = {{"model", loaded.source},
            {"cache", runtime::CacheFactory::describe(settings.cache, loaded.model->architecture().headDim())},
            {"against", runtime::CacheFactory::describe(referenceCache, loaded.model->architecture().headDim())},
            {"press", press.name},
            {"ratio", press.ratio},
            {"options", press.options},
            {"prompt_tokens", prompt.size()},
            {"tokens", result.tokens.size()},
            {"mean_kl", result.meanDivergence},
            {"top1_agreement", result.topAgreement},
            {"first_disagreement", result.firstDisagreement},
            {"kl", result.divergences},
            {"top1_agrees", result.topAgrees},
            {"compressions", result.decisions.size()},
            {"compressed_layers", std::vector<int64_t>(compressed.begin(), compressed.end())},
            {"notices", result.notices},
            {"text", loaded.text->decode(result.tokens)}};
    summary.update(runtime::ComputeThreads::describe());
    return summary;
}

int FidelityCommand::execute(const FidelityOptions& options, std::ostream& out) {
    out << run(options).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
    return 0;
}

} // namespace kvscope::cli
