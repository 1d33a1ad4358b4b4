// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gguf/GgufTokenizerJson.h"

#include "kvscope/gguf/GgufError.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <string_view>
#include <unordered_map>

namespace kvscope::gguf {

namespace {

using nlohmann::json;

json byteLevel(bool useRegex) {
    return {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", useRegex}};
}

/// llama.cpp's pre-tokenizer regexes (llama-vocab.cpp, by `tokenizer.ggml.pre`) as Hugging Face pre-tokenizers,
/// and what llama.cpp's pre-tokenizer type sets besides: whether a word that is a token skips the merges, whether
/// bos is added when the file does not say, and whether decoding drops the space before punctuation
/// (llama.cpp's clean_spaces, Transformers' clean_up_tokenization_spaces).
struct PreTokenizerRow {
    const char* pre;
    json (*make)();
    bool ignoresMerges = false;
    bool addsBos = false;
    bool cleansSpaces = false;
};

/// A regex split (matches isolated) before the byte-level mapping, as Llama 3's and Qwen's tokenizer.json have it.
json splitThenBytes(const char* regex) {
    return json{{"type", "Sequence"},
                {"pretokenizers",
                 json::array({json{{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"},
                                   {"invert", false}},
                              byteLevel(false)})}};
}

// Llama 3's split: contractions, letters with one leading non-letter, numbers in threes, punctuation runs.
constexpr const char* kLlama3Regex = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
                                     "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
// Qwen 2/3's: the same with every digit alone.
constexpr const char* kQwen2Regex = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
                                    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

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
    // Llama 3 (LLAMA_VOCAB_PRE_TYPE_LLAMA3: merges skipped for whole-token words, bos added, spaces cleaned).
    {"llama-bpe", [] { return splitThenBytes(kLlama3Regex); }, true, true, true},
    {"llama3", [] { return splitThenBytes(kLlama3Regex); }, true, true, true},
    {"llama-v3", [] { return splitThenBytes(kLlama3Regex); }, true, true, true},
    // Qwen 2 and 3 (LLAMA_VOCAB_PRE_TYPE_QWEN2).
    {"qwen2", [] { return splitThenBytes(kQwen2Regex); }},
};

/// llama.cpp's token types (llama_token_type): 2 unknown, 3 control, 4 user-defined; the three are matched whole
/// in the text when special tokens are parsed, as Hugging Face's added tokens are.
bool matchedWhole(int64_t type) { return type == 2 || type == 3 || type == 4; }

/// The row of the file's `tokenizer.ggml.pre` (absent: `default`); refused by name when kvscope has none.
const PreTokenizerRow& preTokenizerOf(const GgufMetadata& metadata, const std::string& fileName) {
    const std::string pre = metadata.optionalString("tokenizer.ggml.pre").value_or("default");
    for (const PreTokenizerRow& row : kPreTokenizers) {
        if (pre == row.pre) {
            return row;
        }
    }
    throw GgufError("GGUF file `" + fileName + "` names pre-tokenizer `" + pre +
                    "` (tokenizer.ggml.pre); kvscope reads " + GgufTokenizerJson::readPreTokenizers());
}

/// Byte-level BPE (`gpt2`): the file's merges, GPT-2's byte alphabet, the pre-tokenizer `pre` names.
/// `vocab` is moved into the document (a copy would hold a second vocabulary at the peak of loading).
json byteLevelBpe(const GgufMetadata& metadata, const PreTokenizerRow& preRow, json vocab) {
    return {{"normalizer", nullptr},
            {"pre_tokenizer", preRow.make()},
            {"post_processor", byteLevel(false)},
            {"decoder", byteLevel(true)},
            {"model",
             {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", nullptr},
              {"end_of_word_suffix", nullptr}, {"fuse_unk", false}, {"byte_fallback", false},
              {"ignore_merges", preRow.ignoresMerges}, {"vocab", std::move(vocab)},
              {"merges", metadata.strings("tokenizer.ggml.merges")}}}};
}

/// SentencePiece (`llama`) as llama.cpp tokenizes it: the text's spaces as U+2581 (one more in front where
/// `add_space_prefix` says so, after every special token too), then adjacent pieces merged while their join is
/// a token, highest score first, and what no token covers as byte tokens <0xXX>. That is BPE with byte fallback
/// whose merges are every split of every token into two tokens, ranked by the joined token's score (then by
/// id), as Transformers' SentencePieceExtractor builds a Llama tokenizer's merges.
json sentencePiece(const GgufMetadata& metadata, const std::string& fileName, const std::vector<std::string>& tokens,
                   json vocab) {
    const std::vector<double> scores = metadata.numbers("tokenizer.ggml.scores");
    if (scores.size() != tokens.size()) {
        throw GgufError("GGUF file `" + fileName + "` has " + std::to_string(scores.size()) + " token scores for " +
                        std::to_string(tokens.size()) + " tokens (tokenizer.ggml.scores)");
    }
    std::unordered_map<std::string_view, size_t> ids;
    for (size_t id = 0; id < tokens.size(); ++id) {
        ids.emplace(tokens[id], id);
    }
    struct Merge {
        size_t joined;
        size_t left;
        size_t right;
    };
    std::vector<Merge> merges;
    for (size_t id = 0; id < tokens.size(); ++id) {
        const std::string_view token = tokens[id];
        for (size_t cut = 1; cut < token.size(); ++cut) {
            if ((static_cast<unsigned char>(token[cut]) & 0xC0) == 0x80) {
                continue; // inside a UTF-8 character
            }
            const auto left = ids.find(token.substr(0, cut));
            const auto right = ids.find(token.substr(cut));
            if (left != ids.end() && right != ids.end()) {
                merges.push_back({id, left->second, right->second});
            }
        }
    }
    std::stable_sort(merges.begin(), merges.end(), [&](const Merge& a, const Merge& b) {
        if (scores[a.joined] != scores[b.joined]) {
            return scores[a.joined] > scores[b.joined];
        }
        if (a.joined != b.joined) {
            return a.joined < b.joined;
        }
        return std::pair(a.left, a.right) < std::pair(b.left, b.right);
    });
    // "left right" where neither token has a space: one JSON string, a third of a pair's memory (Gemma 3's
    // vocabulary makes 514847 merges); the pair where one has.
    json mergeList = json::array();
    mergeList.get_ref<json::array_t&>().reserve(merges.size());
    for (const Merge& merge : merges) {
        const std::string& left = tokens[merge.left];
        const std::string& right = tokens[merge.right];
        if (left.find(' ') == std::string::npos && right.find(' ') == std::string::npos) {
            mergeList.push_back(left + " " + right);
        } else {
            mergeList.push_back(json::array({left, right}));
        }
    }
    merges = {};
    const bool spacePrefix = metadata.optionalBool("tokenizer.ggml.add_space_prefix").value_or(true);
    const std::string space = "\xE2\x96\x81"; // U+2581, SentencePiece's space
    json normalizers = json::array();
    if (spacePrefix) {
        normalizers.push_back({{"type", "Prepend"}, {"prepend", space}});
    }
    normalizers.push_back({{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", space}});
    json decoders = json::array({json{{"type", "Replace"}, {"pattern", {{"String", space}}}, {"content", " "}},
                                 json{{"type", "ByteFallback"}}, json{{"type", "Fuse"}}});
    if (spacePrefix) {
        decoders.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
    }
    json unknown = nullptr;
    if (const auto id = metadata.optionalUnsigned("tokenizer.ggml.unknown_token_id"); id && *id < tokens.size()) {
        unknown = tokens[*id];
    }
    return {{"normalizer", {{"type", "Sequence"}, {"normalizers", normalizers}}},
            {"pre_tokenizer", nullptr},
            {"post_processor", nullptr},
            {"decoder", {{"type", "Sequence"}, {"decoders", decoders}}},
            {"model",
             {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", unknown}, {"continuing_subword_prefix", nullptr},
              {"end_of_word_suffix", nullptr}, {"fuse_unk", true}, {"byte_fallback", true},
              {"ignore_merges", false}, {"vocab", std::move(vocab)}, {"merges", std::move(mergeList)}}}};
}

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
    if (model != "gpt2" && model != "llama") {
        throw GgufError("GGUF file `" + fileName + "` has a `" + model +
                        "` tokenizer (tokenizer.ggml.model); kvscope reads GGUF tokenizers of models `gpt2` "
                        "(byte-level BPE) and `llama` (SentencePiece). Give the model's Hugging Face tokenizer instead");
    }
    const std::vector<std::string> tokens = metadata.strings("tokenizer.ggml.tokens");
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
        if (matchedWhole(types[id])) {
            added.push_back({{"id", id}, {"content", tokens[id]}, {"single_word", false}, {"lstrip", false},
                             {"rstrip", false}, {"normalized", false}, {"special", types[id] != 4}});
        }
    }
    const bool spm = model == "llama";
    const PreTokenizerRow* preRow = spm ? nullptr : &preTokenizerOf(metadata, fileName);
    json document = spm ? sentencePiece(metadata, fileName, tokens, std::move(vocab))
                        : byteLevelBpe(metadata, *preRow, std::move(vocab));
    document["version"] = "1.0";
    document["truncation"] = nullptr;
    document["padding"] = nullptr;
    document["added_tokens"] = added;
    // The config's add_bos_token/add_eos_token decide, as they do for a Llama tokenizer in Transformers.
    json config = {{"clean_up_tokenization_spaces", preRow != nullptr && preRow->cleansSpaces},
                   {"tokenizer_class", "LlamaTokenizerFast"}};
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
    // llama.cpp's defaults where the file says nothing: bos for SentencePiece and Llama 3's BPE, not otherwise.
    const std::optional<bool> addBos = metadata.optionalBool("tokenizer.ggml.add_bos_token");
    if (addBos.value_or(false) && !config.contains("bos_token")) {
        throw GgufError("GGUF file `" + fileName + "` sets tokenizer.ggml.add_bos_token but has no "
                        "tokenizer.ggml.bos_token_id: its tokenizer cannot add the bos token it asks for");
    }
    config["add_bos_token"] = addBos.value_or((spm || preRow->addsBos) && config.contains("bos_token"));
    config["add_eos_token"] = metadata.optionalBool("tokenizer.ggml.add_eos_token").value_or(false);
    try {
        return {document.dump(), config.dump()};
    } catch (const json::exception&) {
        throw GgufError("GGUF file `" + fileName + "` has tokenizer metadata that is not UTF-8 text (a token, merge "
                        "or special token); GGUF tokens are UTF-8 strings");
    }
}

} // namespace kvscope::gguf
