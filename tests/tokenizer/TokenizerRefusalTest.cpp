// SPDX-License-Identifier: GPL-3.0-or-later
// Whatever kvscope cannot encode exactly as the reference is refused when the file is loaded, with a
// message naming the component and what is supported.
#include "kvscope/tokenizer/Tokenizer.h"

#include "TokenizerTestJson.h"
#include "kvscope/tokenizer/TokenizerError.h"

#include <gtest/gtest.h>

namespace {

using kvscope::tokenizer::Tokenizer;
using kvscope::tokenizer::TokenizerError;
using kvscope::tokenizer::testing::TokenizerTestJson;

std::string refusal(const nlohmann::json& json) {
    try {
        (void)Tokenizer::fromJson(json.dump());
    } catch (const TokenizerError& error) {
        return error.what();
    }
    return "(loaded)";
}

TEST(TokenizerRefusalTest, NamesTheComponentAndTheSupportedValues) {
    const nlohmann::json base = TokenizerTestJson::byteLevel({});
    // Table: JSON pointer to replace, replacement, expected message.
    const std::vector<std::tuple<std::string, nlohmann::json, std::string>> table = {
        {"/model/type", "WordPiece", "model: unsupported type 'WordPiece' (supported: BPE, Unigram)"},
        {"/normalizer", {{"type", "BertNormalizer"}},
         "normalizer: unsupported type 'BertNormalizer' (supported: NFC, NFD, NFKC, NFKD, Lowercase, Strip, Replace, "
         "Prepend, Sequence)"},
        {"/normalizer", {{"type", "Sequence"}, {"normalizers", {{{"type", "Precompiled"}}}}},
         "normalizer: unsupported type 'Precompiled' (supported: NFC, NFD, NFKC, NFKD, Lowercase, Strip, Replace, "
         "Prepend, Sequence)"},
        {"/pre_tokenizer", {{"type", "Whitespace"}},
         "pre_tokenizer: unsupported type 'Whitespace' (supported: ByteLevel, Split, Metaspace, Digits, Sequence)"},
        {"/pre_tokenizer", {{"type", "Split"}, {"pattern", {{"String", "-"}}}, {"behavior", "Sideways"}},
         "pre_tokenizer Split: unsupported behavior 'Sideways' (supported: Removed, Isolated, MergedWithPrevious, "
         "MergedWithNext, Contiguous)"},
        {"/pre_tokenizer", {{"type", "Metaspace"}, {"prepend_scheme", "sometimes"}},
         "pre_tokenizer Metaspace: unsupported prepend_scheme 'sometimes' (supported: always, first, never)"},
        {"/decoder", {{"type", "CTC"}},
         "decoder: unsupported type 'CTC' (supported: ByteLevel, Metaspace, ByteFallback, Fuse, Strip, Replace, Sequence)"},
        {"/post_processor", {{"type", "BertProcessing"}},
         "post_processor: unsupported type 'BertProcessing' (supported: TemplateProcessing, ByteLevel, Sequence)"},
        {"/truncation", {{"max_length", 512}}, "truncation: unsupported setting '{\"max_length\":512}' (supported: null)"},
        {"/normalizer", {{"kind", "NFC"}}, "normalizer: missing \"type\""},
    };
    for (const auto& [pointer, value, expected] : table) {
        nlohmann::json json = base;
        json[nlohmann::json::json_pointer(pointer)] = value;
        EXPECT_EQ(refusal(json), expected) << pointer;
    }
}

TEST(TokenizerRefusalTest, BadRegexIsRefusedWithOnigurumasMessage) {
    nlohmann::json json = TokenizerTestJson::byteLevel({});
    json["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}};
    EXPECT_EQ(refusal(json).rfind("pre_tokenizer Split: cannot compile regex '(unclosed': ", 0), 0u) << refusal(json);
}

TEST(TokenizerRefusalTest, BadJsonAndMissingModel) {
    try {
        (void)Tokenizer::fromJson("{\"model\": ");
        FAIL() << "expected a refusal";
    } catch (const TokenizerError& error) {
        EXPECT_EQ(std::string(error.what()).rfind("tokenizer.json: bad JSON: ", 0), 0u) << error.what();
    }
    EXPECT_EQ(refusal(nlohmann::json::object()), "tokenizer.json: missing \"model\"");
    EXPECT_EQ(refusal(nlohmann::json::array()), "tokenizer.json: expected a JSON object");
    nlohmann::json badVocab = TokenizerTestJson::byteLevel({});
    badVocab["model"]["vocab"] = {{"a", -1}};
    EXPECT_EQ(refusal(badVocab), "model BPE: vocab id of 'a' must be a non-negative integer");
}

TEST(TokenizerRefusalTest, ConfigThatAsksForAMissingBos) {
    EXPECT_THROW((void)Tokenizer::fromJson(TokenizerTestJson::byteLevel({}).dump(),
                                           R"({"tokenizer_class": "LlamaTokenizer", "add_bos_token": true})"),
                 TokenizerError);
}

} // namespace
