// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gguf/GgufTokenizerJson.h"

#include "kvscope/gguf/GgufError.h"

#include <nlohmann/json.hpp>

namespace kvscope::gguf {

namespace {

using nlohmann::json;

json byteLevel(bool useRegex) {
    return {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", useRegex}};
}

/// llama.cpp's pre-tokenizer regexes (llama-vocab.cpp, by `tokenizer.ggml.pre`) as Hugging Face pre-tokenizers.
struct PreTokenizerRow {
    const char* pre;
    json (*make)();
};

const PreTokenizerRow kPreTokenizers[] = {
    // GPT-2's regex alone (llama.cpp's LLAMA_VOCAB_PRE_TYPE_DEFAULT / GPT2).
    {"gpt-2", [] { return byteLevel(true); }},
    {"default", [] { return byteLevel(true); }},
    // SmolLM (and StarCoder, Refact, ...): every digit alone, then GPT-2's regex.
    {"smollm", [] {
         return json{{"type", "Sequence"},
                     {"pretokenizers",
                      json::array({json{{"type", "Digits"}, {"individual_digits", true}}, byteLevel(true)})}};
     }},
};

} // namespace

std::string GgufTokenizerJson::readPreTokenizers() {
    std::string names;
    for (const PreTokenizerRow& row : kPreTokenizers) {
        names += (names.empty() ? "" : ", ") + std::string(row.pre);
    }
    return names;
}

GgufTokenizerJson GgufTokenizerJson::fromMetadata(const GgufMetadata& metadata, const std::string& fileName) {
    const std::string model = metadata.string("tokenizer.ggml.model");
    if (model != "gpt2") {
        throw GgufError("GGUF file `" + fileName + "` has a `" + model +
                        "` tokenizer (tokenizer.ggml.model); kvscope reads GGUF tokenizers of model `gpt2` "
                        "(byte-level BPE) so far. Give the model's Hugging Face tokenizer instead");
    }
    const std::string pre = metadata.optionalString("tokenizer.ggml.pre").value_or("default");
    const PreTokenizerRow* preRow = nullptr;
    for (const PreTokenizerRow& row : kPreTokenizers) {
        if (pre == row.pre) {
            preRow = &row;
        }
    }
    if (preRow == nullptr) {
        throw GgufError("GGUF file `" + fileName + "` names pre-tokenizer `" + pre +
                        "` (tokenizer.ggml.pre); kvscope reads " + readPreTokenizers());
    }
    const std::vector<std::string> tokens = metadata.strings("tokenizer.ggml.tokens");
    const std::vector<std::string> merges = metadata.strings("tokenizer.ggml.merges");
    std::vector<int64_t> types(tokens.size(), 1);
    if (metadata.contains("tokenizer.ggml.token_type")) {
        types = metadata.integers("tokenizer.ggml.token_type");
        if (types.size() != tokens.size()) {
            throw GgufError("GGUF file `" + fileName + "` has " + std::to_string(types.size()) +
                            " token types for " + std::to_string(tokens.size()) + " tokens");
        }
    }
    json vocab = json::object();
    json added = json::array();
    for (size_t id = 0; id < tokens.size(); ++id) {
        vocab[tokens[id]] = id;
        // llama.cpp's token types: 3 control, 4 user-defined; both are matched whole in the text.
        if (types[id] == 3 || types[id] == 4) {
            added.push_back({{"id", id}, {"content", tokens[id]}, {"single_word", false}, {"lstrip", false},
                             {"rstrip", false}, {"normalized", false}, {"special", types[id] == 3}});
        }
    }
    json document = {
        {"version", "1.0"},
        {"truncation", nullptr},
        {"padding", nullptr},
        {"added_tokens", added},
        {"normalizer", nullptr},
        {"pre_tokenizer", preRow->make()},
        {"post_processor", byteLevel(false)},
        {"decoder", byteLevel(true)},
        {"model",
         {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", nullptr},
          {"end_of_word_suffix", nullptr}, {"fuse_unk", false}, {"byte_fallback", false}, {"ignore_merges", false},
          {"vocab", vocab}, {"merges", merges}}},
    };
    json config = {{"clean_up_tokenization_spaces", false}};
    const auto tokenAt = [&](const char* key) -> std::optional<std::string> {
        const auto id = metadata.optionalUnsigned(key);
        if (!id) {
            return std::nullopt;
        }
        if (*id >= tokens.size()) {
            throw GgufError("GGUF file `" + fileName + "` has `" + key + "` " + std::to_string(*id) + " but only " +
                            std::to_string(tokens.size()) + " tokens");
        }
        return tokens[*id];
    };
    for (const auto& [key, field] : {std::pair{"tokenizer.ggml.bos_token_id", "bos_token"},
                                     std::pair{"tokenizer.ggml.eos_token_id", "eos_token"},
                                     std::pair{"tokenizer.ggml.unknown_token_id", "unk_token"},
                                     std::pair{"tokenizer.ggml.padding_token_id", "pad_token"}}) {
        if (const auto token = tokenAt(key)) {
            config[field] = *token;
        }
    }
    // llama.cpp adds bos only where the file says so (llama_vocab's default for BPE is false).
    config["add_bos_token"] = metadata.optionalBool("tokenizer.ggml.add_bos_token").value_or(false);
    config["add_eos_token"] = metadata.optionalBool("tokenizer.ggml.add_eos_token").value_or(false);
    try {
        return {document.dump(), config.dump()};
    } catch (const json::exception&) {
        throw GgufError("GGUF file `" + fileName + "` has tokenizer metadata that is not UTF-8 text (a token, merge "
                        "or special token); byte-level BPE tokens are UTF-8 strings");
    }
}

} // namespace kvscope::gguf
