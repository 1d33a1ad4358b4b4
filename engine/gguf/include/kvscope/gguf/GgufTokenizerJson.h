// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gguf/GgufMetadata.h"

#include <string>

namespace kvscope::gguf {

/// The tokenizer a GGUF file describes (`tokenizer.ggml.*`), written as the tokenizer.json and
/// tokenizer_config.json texts Hugging Face's format gives it, so that kvscope's one tokenizer reads both
/// formats. Byte-level BPE (`tokenizer.ggml.model` "gpt2") with the pre-tokenizer llama.cpp's `pre` names, and
/// SentencePiece ("llama") as BPE with byte fallback over merges built from the token scores; other models
/// and pre-tokenizers are refused by name with the list of those read.
struct GgufTokenizerJson {
    std::string tokenizerJson;
    std::string configJson;

    /// GgufError naming `fileName`, the key and the allowed values when the metadata cannot be read.
    static GgufTokenizerJson fromMetadata(const GgufMetadata& metadata, const std::string& fileName);
    /// The `tokenizer.ggml.pre` values read, for messages.
    static std::string readPreTokenizers();
};

} // namespace kvscope::gguf
