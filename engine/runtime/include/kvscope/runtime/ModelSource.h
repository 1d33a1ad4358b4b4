// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <c10/core/Device.h>
#include "kvscope/config/RunSettings.h"
#include "kvscope/runtime/TextCodec.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace kvscope::model {
class LanguageModel;
}

namespace kvscope::runtime {

/// Loads the model a run names: a GGUF file, a checkpoint folder, a config.json with built-in weights, or a preset
/// (the default preset when none is given), and the text it speaks through. The CLI's `run` and the
/// GUI's live sessions share it.
class ModelSource {
public:
    struct Loaded {
        std::unique_ptr<model::LanguageModel> model;
        std::string name;                 ///< the checkpoint folder, the config path or the preset name
        /// As a session file records it: {"preset"|"config"|"checkpoint"|"model" (a GGUF file), "weight_seed" for built-in random
        /// weights or "weights" (the file) for a preset's trained weights, "tokenizer"}.
        nlohmann::json source;
        /// The checkpoint's own tokenizer where its folder brings one, the settings' tokenizerPath for a
        /// preset or config.json, else the byte tokenizer.
        std::unique_ptr<TextCodec> text;
    };

    /// The model source of `settings` (config::validate has accepted them): a checkpoint folder, else a
    /// config.json (random weights), else the preset: its trained weights where it has some and no
    /// `weightSeed` is given, else the random weights of `weightSeed` (0 when not given). A tokenizer with
    /// more ids than the model's vocabulary is refused, naming both sizes (fewer is fine: checkpoints pad
    /// their embeddings).
    static Loaded load(const config::RunSettings& settings, const at::Device& device);
};

} // namespace kvscope::runtime
