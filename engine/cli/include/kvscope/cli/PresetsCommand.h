// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <iosfwd>

namespace CLI {
class App;
}

namespace kvscope::runtime {
class PresetCatalog;
}

namespace kvscope::cli {

/// `kvscope-cli presets`: the built-in model presets with their layer patterns, as JSON.
class PresetsCommand {
public:
    /// Adds the `presets` subcommand to `app`.
    static CLI::App* addSubcommand(CLI::App& app);
    /// {"directory", "default", "presets": [{"name", "model_type", "num_hidden_layers", "layer_types",
    /// "pattern", "sliding_window", "attention_chunk_size", "num_kv_shared_layers", "encoder_decoder",
    /// "hidden_size", "vocab_size"}]}; a preset that does not load carries "error" instead.
    static nlohmann::json list(const runtime::PresetCatalog& catalog);
    /// Prints list() of the default catalog on `out`; returns the exit code.
    static int execute(std::ostream& out);
};

} // namespace kvscope::cli
