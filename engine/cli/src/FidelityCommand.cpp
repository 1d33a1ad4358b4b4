// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cli/FidelityCommand.h"

#include "kvscope/cli/CliRunOptions.h"
#include "kvscope/config/PressDescriptions.h"
#include "kvscope/model/LanguageModel.h"
#include "kvscope/model/ModelLoader.h"
#include "kvscope/runtime/ComputeThreads.h"
#include "kvscope/runtime/GenerationError.h"
#include "kvscope/runtime/ModelSource.h"
#include "kvscope/runtime/PressFidelity.h"
#include "kvscope/runtime/TextCodec.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>

namespace kvscope::cli {

CLI::App* FidelityCommand::addSubcommand(CLI::App& app, RunOptions& options) {
    CLI::App* command = app.add_subcommand(
        "fidelity", "KL divergence and top-1 agreement of a press against no press, token by token; JSON on stdout");
    // Greedy by design: the model, cache and press options of a run, no decoding ones.
    CliRunOptions::addTo(*command, options.run,
                         {config::RunOption::Group::Model, config::RunOption::Group::Press});
    return command;
}

nlohmann::json FidelityCommand::run(const RunOptions& options) {
    const config::RunSettings settings = RunCommand::settingsOf(options);
    const config::PressSettings& press = settings.press;
    if (press.name.empty()) {
        throw runtime::GenerationError("fidelity compares a press against no press: give --press NAME (" +
                                       config::PressDescriptions::allowedNames() + ")");
    }
    runtime::ComputeThreads::apply(config::computeThreads(settings));
    runtime::ModelSource::Loaded loaded = runtime::ModelSource::load(settings, model::ModelLoader::device(settings.device));
    const std::vector<int64_t> prompt = loaded.text->encode(settings.prompt);
    const runtime::FidelityResult result =
        runtime::PressFidelity::measure(*loaded.model, settings.cache, prompt, settings.tokens, press);
    std::set<int64_t> compressed;
    for (const runtime::PressDecision& decision : result.decisions) {
        compressed.insert(decision.layer);
    }
    nlohmann::json summary = {{"model", loaded.source},
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

int FidelityCommand::execute(const RunOptions& options, std::ostream& out) {
    out << run(options).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
    return 0;
}

} // namespace kvscope::cli
