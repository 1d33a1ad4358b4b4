// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "ByteLevelAlphabet.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace kvscope::tokenizer::testing {

/// Small tokenizer.json documents in the shape of real checkpoints, for tests of the whole pipeline.
class TokenizerTestJson {
public:
    /// Llama 3 style: regex Split + ByteLevel + BPE with ignore_merges, all 256 byte characters in the
    /// vocabulary plus the given merges, and the added token <|eot|> (id 1000).
    static nlohmann::json byteLevel(const std::vector<std::string>& merges) {
        nlohmann::json vocab = nlohmann::json::object();
        std::uint32_t next = 0;
        for (int b = 0; b < 256; ++b) {
            vocab[ByteLevelAlphabet::charFor(static_cast<unsigned char>(b))] = next++;
        }
        for (const std::string& merge : merges) {
            const auto space = merge.find(' ');
            const std::string merged = merge.substr(0, space) + merge.substr(space + 1);
            if (!vocab.contains(merged)) {
                vocab[merged] = next++;
            }
        }
        return {
            {"version", "1.0"},
            {"added_tokens", {{{"id", 1000}, {"content", "<|eot|>"}, {"single_word", false}, {"lstrip", false},
                               {"rstrip", false}, {"normalized", false}, {"special", true}}}},
            {"normalizer", nullptr},
            {"pre_tokenizer",
             {{"type", "Sequence"},
              {"pretokenizers",
               {{{"type", "Split"},
                 {"pattern", {{"Regex", "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}}},
                 {"behavior", "Isolated"},
                 {"invert", false}},
                {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}}}}}},
            {"post_processor", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", false}, {"use_regex", true}}},
            {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
            {"model", {{"type", "BPE"}, {"ignore_merges", true}, {"vocab", vocab}, {"merges", merges}}}};
    }

    /// Llama 2 style: Prepend + Replace normalizer, BPE with byte_fallback over <0x00>..<0xFF>, the
    /// given pieces and merges, <unk>/<s>/</s> as ids 0/1/2, template "<s> $A", decoder chain.
    static nlohmann::json sentencePieceStyle(const std::vector<std::string>& pieces, const std::vector<std::string>& merges) {
        nlohmann::json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}};
        std::uint32_t next = 3;
        for (int b = 0; b < 256; ++b) {
            char name[8];
            std::snprintf(name, sizeof name, "<0x%02X>", b);
            vocab[name] = next++;
        }
        for (const std::string& piece : pieces) {
            vocab[piece] = next++;
        }
        auto added = [](int id, const char* content) {
            return nlohmann::json{{"id", id}, {"content", content}, {"single_word", false}, {"lstrip", false},
                                  {"rstrip", false}, {"normalized", false}, {"special", true}};
        };
        return {
            {"added_tokens", {added(0, "<unk>"), added(1, "<s>"), added(2, "</s>")}},
            {"normalizer",
             {{"type", "Sequence"},
              {"normalizers",
               {{{"type", "Prepend"}, {"prepend", "\u2581"}},
                {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}}}}}},
            {"pre_tokenizer", nullptr},
            {"post_processor", nlohmann::json::parse(R"({"type": "TemplateProcessing",
                 "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                 "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}})")},
            {"decoder",
             {{"type", "Sequence"},
              {"decoders",
               {{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
                {{"type", "ByteFallback"}},
                {{"type", "Fuse"}},
                {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}}},
            {"model",
             {{"type", "BPE"}, {"unk_token", "<unk>"}, {"fuse_unk", true}, {"byte_fallback", true},
              {"vocab", vocab}, {"merges", merges}}}};
    }
};

} // namespace kvscope::tokenizer::testing
