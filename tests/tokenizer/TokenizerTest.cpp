// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/tokenizer/Tokenizer.h"

#include "TokenizerTestJson.h"
#include "kvscope/tokenizer/TokenizerError.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

namespace {

using kvscope::tokenizer::Encoding;
using kvscope::tokenizer::Tokenizer;
using kvscope::tokenizer::TokenizerError;
using kvscope::tokenizer::testing::TokenizerTestJson;

// "token@begin-end" for every token.
std::vector<std::string> describe(const Encoding& encoding) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < encoding.size(); ++i) {
        out.push_back(encoding.tokens[i] + "@" + std::to_string(encoding.offsets[i].first) + "-" +
                      std::to_string(encoding.offsets[i].second));
    }
    return out;
}

const std::vector<std::string> kByteLevelMerges = {"H e", "l l", "He ll", "Hell o", "\u0120 w", "o r", "l d", "\u0120w or", "\u0120wor ld"};

TEST(TokenizerTest, ByteLevelEncodesWithOffsetsAndAddedTokens) {
    const Tokenizer tokenizer = Tokenizer::fromJson(TokenizerTestJson::byteLevel(kByteLevelMerges).dump());
    const Encoding encoding = tokenizer.encode("Hello world<|eot|>caf\u00e9");
    EXPECT_EQ(describe(encoding), (std::vector<std::string>{"Hello@0-5", "\u0120world@5-11", "<|eot|>@11-18", "c@18-19",
                                                            "a@19-20", "f@20-21", "\u00c3@21-23", "\u00a9@21-23"}));
    EXPECT_EQ(encoding.ids[2], 1000);
    // Decoding gives the text back; the added token passes through verbatim.
    EXPECT_EQ(tokenizer.decode(encoding.ids), "Hello world<|eot|>caf\u00e9");
    EXPECT_EQ(tokenizer.decode(encoding.ids, true), "Hello worldcaf\u00e9");
    EXPECT_EQ(tokenizer.tokenToId("<|eot|>"), 1000);
    EXPECT_EQ(tokenizer.idToToken(1000), "<|eot|>");
    EXPECT_EQ(tokenizer.vocabSize(), 1001u);
    EXPECT_EQ(tokenizer.modelType(), "BPE");
}

TEST(TokenizerTest, DecodeCleansUpSpacesAsTheConfigSays) {
    const std::string json = TokenizerTestJson::byteLevel({}).dump();
    const Tokenizer cleaning = Tokenizer::fromJson(json, R"({"clean_up_tokenization_spaces": true})");
    const Tokenizer keeping = Tokenizer::fromJson(json, R"({"clean_up_tokenization_spaces": false})");
    const std::string text = "Hi , it 's done .";
    EXPECT_EQ(cleaning.decode(cleaning.encode(text).ids), "Hi, it's done.");
    EXPECT_EQ(keeping.decode(keeping.encode(text).ids), text);
}

TEST(TokenizerTest, SentencePieceStyleWithByteFallbackAndTemplate) {
    const Tokenizer tokenizer = Tokenizer::fromJson(
        TokenizerTestJson::sentencePieceStyle({"\u2581", "H", "i", "\u2581H", "\u2581Hi"}, {"\u2581 H", "\u2581H i"}).dump(),
        R"({"bos_token": "<s>", "eos_token": "</s>", "clean_up_tokenization_spaces": false})");
    const Encoding encoding = tokenizer.encode("Hi \u00e9");
    EXPECT_EQ(describe(encoding), (std::vector<std::string>{"<s>@0-0", "\u2581Hi@0-2", "\u2581@2-3", "<0xC3>@3-4", "<0xA9>@4-5"}));
    EXPECT_EQ(tokenizer.decode(encoding.ids), "<s> Hi \u00e9");
    EXPECT_EQ(tokenizer.decode(encoding.ids, true), "Hi \u00e9");
    EXPECT_EQ(describe(tokenizer.encode("Hi", false)), (std::vector<std::string>{"\u2581Hi@0-2"}));
    // An added token in the middle: each text section gets its own prepended metaspace.
    EXPECT_EQ(describe(tokenizer.encode("Hi</s>Hi", false)),
              (std::vector<std::string>{"\u2581Hi@0-2", "</s>@2-6", "\u2581Hi@6-8"}));
    EXPECT_EQ(tokenizer.bosId(), 1);
    EXPECT_EQ(tokenizer.eosId(), 2);
}

TEST(TokenizerTest, ConfigFlagsRebuildTheTemplateOfLlamaClasses) {
    const std::string json = TokenizerTestJson::sentencePieceStyle({"\u2581Hi", "\u2581", "H", "i", "\u2581H"},
                                                                   {"\u2581 H", "\u2581H i"})
                                 .dump();
    const Tokenizer bosAndEos = Tokenizer::fromJson(
        json, R"({"tokenizer_class": "LlamaTokenizer", "bos_token": "<s>", "eos_token": "</s>",
                  "add_bos_token": true, "add_eos_token": true})");
    EXPECT_EQ(bosAndEos.encode("Hi").tokens, (std::vector<std::string>{"<s>", "\u2581Hi", "</s>"}));
    const Tokenizer none = Tokenizer::fromJson(
        json, R"({"tokenizer_class": "LlamaTokenizerFast", "bos_token": "<s>", "add_bos_token": false})");
    EXPECT_EQ(none.encode("Hi").tokens, (std::vector<std::string>{"\u2581Hi"}));
    // Other classes keep tokenizer.json's post-processor, as transformers does.
    const Tokenizer other = Tokenizer::fromJson(json, R"({"tokenizer_class": "PreTrainedTokenizerFast", "add_bos_token": false})");
    EXPECT_EQ(other.encode("Hi").tokens, (std::vector<std::string>{"<s>", "\u2581Hi"}));
}

TEST(TokenizerTest, RefusesInvalidUtf8AndUnknownIds) {
    const Tokenizer tokenizer = Tokenizer::fromJson(TokenizerTestJson::byteLevel({}).dump());
    try {
        (void)tokenizer.encode("ab\xC3");
        FAIL() << "expected a refusal";
    } catch (const TokenizerError& error) {
        EXPECT_STREQ(error.what(), "encode: the text is not valid UTF-8");
    }
    const std::vector<std::int32_t> ids = {5000};
    EXPECT_THROW((void)tokenizer.decode(ids), TokenizerError);
    EXPECT_TRUE(tokenizer.encode("").ids.empty());
    EXPECT_EQ(tokenizer.decode({}), "");
}

TEST(TokenizerTest, EncodesFromSeveralThreadsAtOnce) {
    // encode is const and shares the BPE word cache: threads must see the same answers as one thread.
    const Tokenizer tokenizer = Tokenizer::fromJson(TokenizerTestJson::byteLevel(kByteLevelMerges).dump());
    std::vector<std::string> texts;
    for (int i = 0; i < 200; ++i) {
        texts.push_back("Hello world " + std::to_string(i * 7919) + " caf\u00e9<|eot|>Hello");
    }
    std::vector<std::vector<std::int32_t>> expected;
    for (const auto& text : texts) {
        expected.push_back(tokenizer.encode(text).ids);
    }
    const Tokenizer fresh = Tokenizer::fromJson(TokenizerTestJson::byteLevel(kByteLevelMerges).dump());
    std::vector<std::thread> threads;
    std::vector<int> mismatches(4, 0);
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            for (std::size_t i = 0; i < texts.size(); ++i) {
                mismatches[t] += fresh.encode(texts[(i + t * 50) % texts.size()]).ids != expected[(i + t * 50) % texts.size()];
            }
        });
    }
    for (auto& thread : threads) {
        thread.join();
    }
    EXPECT_EQ(mismatches, (std::vector<int>{0, 0, 0, 0}));
}

TEST(TokenizerTest, LoadsAFolderWithItsConfig) {
    const auto folder = std::filesystem::temp_directory_path() / "kvscope-tokenizer-test-folder";
    std::filesystem::create_directories(folder);
    std::ofstream(folder / "tokenizer.json") << TokenizerTestJson::byteLevel(kByteLevelMerges).dump();
    std::ofstream(folder / "tokenizer_config.json") << R"({"eos_token": "<|eot|>"})";
    const Tokenizer fromFolder = Tokenizer::fromPath(folder);
    const Tokenizer fromFile = Tokenizer::fromPath(folder / "tokenizer.json");
    EXPECT_EQ(fromFolder.eosId(), 1000);
    EXPECT_EQ(fromFile.eosId(), 1000);
    EXPECT_EQ(fromFolder.encode("Hello").ids, fromFile.encode("Hello").ids);
    std::filesystem::remove_all(folder);
    EXPECT_THROW(Tokenizer::fromPath(folder), TokenizerError);
}

} // namespace
