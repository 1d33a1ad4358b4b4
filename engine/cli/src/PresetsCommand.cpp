// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cli/PresetsCommand.h"

#include "kvscope/model/Architecture.h"
#include "kvscope/runtime/PresetCatalog.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <ostream>

namespace kvscope::cli {

CLI::App* PresetsCommand::addSubcommand(CLI::App& app) {
    return app.add_subcommand("presets", "List the built-in model presets with their layer patterns (JSON)");
}

nlohmann::json PresetsCommand::list(const runtime::PresetCatalog& catalog) {
    nlohmann::json presets = nlohmann::json::array();
    for (const std::string& name : catalog.names()) {
        nlohmann::json entry{{"name", name}, {"path", catalog.path(name).string()}};
        try {
            const model::Architecture architecture(catalog.load(name));
            const config::ModelConfig& config = architecture.config();
            nlohmann::json types = nlohmann::json::array();
            for (model::AttentionKind kind : architecture.attentionKinds()) {
                types.push_back(model::Architecture::attentionKindName(kind));
            }
            entry["model_type"] = config.modelType;
            entry["num_hidden_layers"] = architecture.numLayers();
            entry["layer_types"] = types;
            entry["pattern"] = architecture.patternSummary();
            entry["sliding_window"] = config.slidingWindow ? nlohmann::json(*config.slidingWindow) : nlohmann::json();
            entry["attention_chunk_size"] =
                config.attentionChunkSize ? nlohmann::json(*config.attentionChunkSize) : nlohmann::json();
            entry["num_kv_shared_layers"] = architecture.numKvSharedLayers();
            entry["encoder_decoder"] = architecture.isEncoderDecoder();
            entry["hidden_size"] = architecture.hiddenSize();
            entry["vocab_size"] = architecture.vocabSize();
        } catch (const std::exception& error) {
            entry["error"] = error.what();
        }
        presets.push_back(std::move(entry));
    }
    return {{"directory", catalog.directory().string()},
            {"default", runtime::PresetCatalog::defaultPreset()},
            {"presets", presets}};
}

int PresetsCommand::execute(std::ostream& out) {
    out << list(runtime::PresetCatalog()).dump(2) << std::endl;
    return 0;
}

} // namespace kvscope::cli
