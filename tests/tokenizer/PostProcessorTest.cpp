// SPDX-License-Identifier: GPL-3.0-or-later
#include "PostProcessor.h"

#include "kvscope/tokenizer/TokenizerError.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

using kvscope::tokenizer::EncodedToken;
using kvscope::tokenizer::PostProcessor;
using kvscope::tokenizer::TokenizerError;

std::vector<std::string> tokens(const std::vector<EncodedToken>& encoded) {
    std::vector<std::string> out;
    for (const auto& token : encoded) {
        out.push_back(token.token + "=" + std::to_string(token.id));
    }
    return out;
}

const nlohmann::json kTemplate = nlohmann::json::parse(R"({
  "type": "TemplateProcessing",
  "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
             {"SpecialToken": {"id": "</s>", "type_id": 0}}],
  "pair": [],
  "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]},
                     "</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]}}})");

TEST(PostProcessorTest, TemplateAddsSpecialTokensAroundTheSequence) {
    const auto processor = PostProcessor::fromJson(kTemplate);
    std::vector<EncodedToken> encoded = {{7, "hi", {0, 2}}};
    processor->process(encoded, true);
    EXPECT_EQ(tokens(encoded), (std::vector<std::string>{"<s>=1", "hi=7", "</s>=2"}));
    EXPECT_EQ(encoded[0].offsets.end, 0u); // added tokens have empty offsets
    std::vector<EncodedToken> plain = {{7, "hi", {0, 2}}};
    processor->process(plain, false);
    EXPECT_EQ(tokens(plain), (std::vector<std::string>{"hi=7"}));
}

TEST(PostProcessorTest, TemplateRefusesUnknownSpecialTokens) {
    nlohmann::json json = kTemplate;
    json["special_tokens"].erase("</s>");
    try {
        PostProcessor::fromJson(json);
        FAIL() << "expected a refusal";
    } catch (const TokenizerError& error) {
        EXPECT_STREQ(error.what(), "post_processor TemplateProcessing: special token '</s>' is used by the template but "
                                   "missing from \"special_tokens\"");
    }
}

TEST(PostProcessorTest, ByteLevelTrimsOffsetsOfSpaces) {
    const auto processor = PostProcessor::fromJson({{"type", "ByteLevel"}, {"trim_offsets", true}, {"add_prefix_space", false}});
    std::vector<EncodedToken> encoded = {{1, "Hello", {0, 5}}, {2, "\u0120world", {5, 11}}, {3, "\u0120\u0120", {11, 13}}};
    processor->process(encoded, true);
    EXPECT_EQ(encoded[1].offsets.start, 6u);
    EXPECT_EQ(encoded[1].offsets.end, 11u);
    EXPECT_EQ(encoded[2].offsets.start, 13u);
    const auto keep = PostProcessor::fromJson({{"type", "ByteLevel"}, {"trim_offsets", false}});
    std::vector<EncodedToken> untouched = {{2, "\u0120world", {5, 11}}};
    keep->process(untouched, true);
    EXPECT_EQ(untouched[0].offsets.start, 5u);
}

TEST(PostProcessorTest, RefusesRoberta) {
    try {
        PostProcessor::fromJson({{"type", "RobertaProcessing"}});
        FAIL() << "expected a refusal";
    } catch (const TokenizerError& error) {
        EXPECT_STREQ(error.what(), "post_processor: unsupported type 'RobertaProcessing' (supported: TemplateProcessing, "
                                   "ByteLevel, Sequence)");
    }
}

} // namespace
