// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/tokenizer/TokenizerConfig.h"

#include "kvscope/tokenizer/TokenizerError.h"

#include <gtest/gtest.h>

namespace {

using kvscope::tokenizer::TokenizerConfig;
using kvscope::tokenizer::TokenizerError;

TEST(TokenizerConfigTest, ReadsTokensAndFlags) {
    const TokenizerConfig config = TokenizerConfig::fromJson(R"({
        "add_bos_token": true, "add_eos_token": false, "bos_token": "<s>",
        "eos_token": {"__type": "AddedToken", "content": "</s>", "lstrip": false},
        "unk_token": null, "clean_up_tokenization_spaces": false, "tokenizer_class": "LlamaTokenizer",
        "additional_special_tokens": ["<a>", {"content": "<b>"}]})");
    EXPECT_EQ(config.bosToken, "<s>");
    EXPECT_EQ(config.eosToken, "</s>");
    EXPECT_FALSE(config.unkToken.has_value());
    EXPECT_EQ(config.addBosToken, true);
    EXPECT_EQ(config.addEosToken, false);
    EXPECT_FALSE(config.cleanUpTokenizationSpaces);
    EXPECT_EQ(config.tokenizerClass, "LlamaTokenizer");
    EXPECT_EQ(config.additionalSpecialTokens, (std::vector<std::string>{"<a>", "<b>"}));
}

TEST(TokenizerConfigTest, DefaultsWhereTheFileIsSilent) {
    const TokenizerConfig config = TokenizerConfig::fromJson("{}");
    EXPECT_FALSE(config.addBosToken.has_value());
    EXPECT_TRUE(config.cleanUpTokenizationSpaces);
    EXPECT_TRUE(TokenizerConfig::fromJson("").tokenizerClass.empty());
}

TEST(TokenizerConfigTest, RefusesBadJsonAndBadTypes) {
    EXPECT_THROW(TokenizerConfig::fromJson("{"), TokenizerError);
    try {
        TokenizerConfig::fromJson(R"({"add_bos_token": "yes"})");
        FAIL() << "expected a refusal";
    } catch (const TokenizerError& error) {
        EXPECT_STREQ(error.what(), "tokenizer_config.json: \"add_bos_token\" must be true or false");
    }
}

} // namespace
