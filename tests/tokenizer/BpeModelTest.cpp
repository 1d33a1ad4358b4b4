// SPDX-License-Identifier: GPL-3.0-or-later
#include "BpeModel.h"

#include "kvscope/tokenizer/TokenizerError.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

using kvscope::tokenizer::BpeModel;
using kvscope::tokenizer::ModelToken;
using kvscope::tokenizer::TokenizerError;

nlohmann::json bpe(nlohmann::json vocab, nlohmann::json merges) {
    return {{"type", "BPE"}, {"vocab", std::move(vocab)}, {"merges", std::move(merges)}};
}

// Token strings of word, with "(begin,end)" appended when withOffsets.
std::vector<std::string> runInBpeModel(const BpeModel& model, const std::string& word, bool withOffsets = false) {
    std::vector<ModelToken> tokens;
    model.tokenize(word, tokens);
    std::vector<std::string> out;
    for (const ModelToken& token : tokens) {
        std::string text = *model.idToToken(token.id);
        if (withOffsets) {
            text += "(" + std::to_string(token.begin) + "," + std::to_string(token.end) + ")";
        }
        out.push_back(text);
    }
    return out;
}

TEST(BpeModelTest, MergeRanksDecideTheOrder) {
    const nlohmann::json vocab = {{"a", 0}, {"b", 1}, {"c", 2}, {"ab", 3}, {"bc", 4}, {"abc", 5}, {"aa", 6}};
    // Table: merges (in rank order), word, expected tokens.
    const std::vector<std::tuple<std::vector<std::string>, std::string, std::vector<std::string>>> table = {
        {{"a b", "b c", "ab c"}, "abc", {"abc"}},
        {{"b c", "a b", "a bc"}, "abc", {"abc"}},
        {{"b c", "a b"}, "abc", {"a", "bc"}},  // bc first, and no merge makes a + bc
        {{"a b", "b c"}, "abc", {"ab", "c"}},  // ab first, and no merge makes ab + c
        {{"a a"}, "aaa", {"aa", "a"}},         // equal ranks: leftmost first
        {{"a b"}, "abab", {"ab", "ab"}},
        {{}, "cab", {"c", "a", "b"}},
    };
    for (const auto& [merges, word, expected] : table) {
        const BpeModel model(bpe(vocab, merges));
        EXPECT_EQ(runInBpeModel(model, word), expected) << word << " with " << nlohmann::json(merges).dump();
    }
}

TEST(BpeModelTest, MergesAsPairsAreTheSameAsStrings) {
    const nlohmann::json vocab = {{"a", 0}, {"b", 1}, {"ab", 2}};
    const BpeModel strings(bpe(vocab, {"a b"}));
    const BpeModel pairs(bpe(vocab, nlohmann::json::array({nlohmann::json::array({"a", "b"})})));
    EXPECT_EQ(runInBpeModel(strings, "ab"), runInBpeModel(pairs, "ab"));
    EXPECT_EQ(runInBpeModel(pairs, "ab"), (std::vector<std::string>{"ab"}));
}

TEST(BpeModelTest, ByteFallbackGivesOneTokenPerByte) {
    nlohmann::json vocab = {{"x", 0}, {"<unk>", 1}};
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        vocab[name] = 2 + b;
    }
    nlohmann::json json = bpe(vocab, nlohmann::json::array());
    json["byte_fallback"] = true;
    json["unk_token"] = "<unk>";
    const BpeModel model(json);
    // é is C3 A9: two byte tokens, one byte of offset each.
    EXPECT_EQ(runInBpeModel(model, "x\u00e9", true), (std::vector<std::string>{"x(0,1)", "<0xC3>(1,2)", "<0xA9>(2,3)"}));
}

TEST(BpeModelTest, PendingUnknownStaysBeforeFallbackBytes) {
    // Found by TokenizerJsonFuzzer: a vocabulary with only some byte tokens. Symbols stay in text
    // order, so offsets never leave the word.
    nlohmann::json json = bpe({{"x", 0}, {"<unk>", 1}, {"<0xC3>", 2}, {"<0xA9>", 3}}, nlohmann::json::array());
    json["byte_fallback"] = true;
    json["unk_token"] = "<unk>";
    json["fuse_unk"] = true;
    EXPECT_EQ(runInBpeModel(BpeModel(json), "qq\u00e9x", true),
              (std::vector<std::string>{"<unk>(0,2)", "<0xC3>(2,3)", "<0xA9>(3,4)", "x(4,5)"}));
}

TEST(BpeModelTest, UnknownCharactersFuseWhenAsked) {
    const nlohmann::json vocab = {{"x", 0}, {"y", 1}, {"<unk>", 2}};
    nlohmann::json json = bpe(vocab, nlohmann::json::array());
    json["unk_token"] = "<unk>";
    json["fuse_unk"] = false;
    EXPECT_EQ(runInBpeModel(BpeModel(json), "x??y", true), (std::vector<std::string>{"x(0,1)", "<unk>(1,2)", "<unk>(2,3)", "y(3,4)"}));
    json["fuse_unk"] = true;
    EXPECT_EQ(runInBpeModel(BpeModel(json), "x??y", true), (std::vector<std::string>{"x(0,1)", "<unk>(1,3)", "y(3,4)"}));
    // Without an unk token, unknown characters are dropped (Hugging Face does the same).
    json.erase("unk_token");
    EXPECT_EQ(runInBpeModel(BpeModel(json), "x?y"), (std::vector<std::string>{"x", "y"}));
}

TEST(BpeModelTest, IgnoreMergesTakesWholeWordsFromTheVocabulary) {
    const nlohmann::json vocab = {{"a", 0}, {"b", 1}, {"c", 2}, {"ab", 3}, {"abc", 4}};
    nlohmann::json json = bpe(vocab, {"a b"});
    EXPECT_EQ(runInBpeModel(BpeModel(json), "abc"), (std::vector<std::string>{"ab", "c"}));
    json["ignore_merges"] = true;
    EXPECT_EQ(runInBpeModel(BpeModel(json), "abc"), (std::vector<std::string>{"abc"}));
}

TEST(BpeModelTest, ContinuingSubwordPrefix) {
    nlohmann::json json = bpe({{"a", 0}, {"##b", 1}, {"ab", 2}, {"##c", 3}}, {"a ##b"});
    json["continuing_subword_prefix"] = "##";
    const BpeModel model(json);
    EXPECT_EQ(runInBpeModel(model, "ab"), (std::vector<std::string>{"ab"}));
    EXPECT_EQ(runInBpeModel(model, "abc"), (std::vector<std::string>{"ab", "##c"}));
}

TEST(BpeModelTest, CachedAndUncachedResultsAgree) {
    const BpeModel model(bpe({{"a", 0}, {"b", 1}, {"ab", 2}}, {"a b"}));
    const auto first = runInBpeModel(model, "abab", true);
    EXPECT_EQ(runInBpeModel(model, "abab", true), first);
}

TEST(BpeModelTest, RefusesMergesOutsideTheVocabulary) {
    try {
        BpeModel model(bpe({{"a", 0}, {"b", 1}}, {"a b"}));
        FAIL() << "expected a refusal";
    } catch (const TokenizerError& error) {
        EXPECT_STREQ(error.what(), "model BPE: merge 0 makes 'ab', which is not in the vocabulary");
    }
    try {
        BpeModel model(bpe({{"a", 0}, {"ab", 1}}, {"a b"}));
        FAIL() << "expected a refusal";
    } catch (const TokenizerError& error) {
        EXPECT_STREQ(error.what(), "model BPE: merge 0 uses a token missing from the vocabulary ('b')");
    }
    EXPECT_THROW(BpeModel(bpe({{"a", 0}}, {"a b c"})), TokenizerError);
    nlohmann::json dropout = bpe({{"a", 0}}, nlohmann::json::array());
    dropout["dropout"] = 0.1;
    EXPECT_THROW(BpeModel{dropout}, TokenizerError);
}

} // namespace
