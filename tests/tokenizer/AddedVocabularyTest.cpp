// SPDX-License-Identifier: GPL-3.0-or-later
#include "AddedVocabulary.h"

#include "Normalizer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

using kvscope::tokenizer::AddedVocabulary;
using kvscope::tokenizer::Normalizer;

nlohmann::json token(std::uint32_t id, const std::string& content, bool lstrip = false, bool rstrip = false,
                     bool singleWord = false, bool normalized = false) {
    return {{"id", id}, {"content", content}, {"lstrip", lstrip}, {"rstrip", rstrip}, {"single_word", singleWord},
            {"normalized", normalized}, {"special", !normalized}};
}

// "text|id" for added tokens, "text" for the rest.
std::vector<std::string> run(const AddedVocabulary& vocabulary, const std::string& text, bool normalizedForm = false) {
    std::vector<AddedVocabulary::Split> splits;
    vocabulary.split(text, normalizedForm, splits);
    std::vector<std::string> out;
    for (const auto& split : splits) {
        std::string piece = text.substr(split.begin, split.end - split.begin);
        if (split.id) {
            piece += "|" + std::to_string(*split.id);
        }
        out.push_back(piece);
    }
    return out;
}

TEST(AddedVocabularyTest, LongestTokenWinsAtTheLeftmostPosition) {
    const AddedVocabulary vocabulary(nlohmann::json::array({token(10, "<s>"), token(11, "<s>>"), token(12, "s>x")}), nullptr);
    EXPECT_EQ(run(vocabulary, "a<s>>b<s>"), (std::vector<std::string>{"a", "<s>>|11", "b", "<s>|10"}));
    EXPECT_EQ(run(vocabulary, "<s"), (std::vector<std::string>{"<s"}));
}

TEST(AddedVocabularyTest, LstripAndRstripTakeTheSurroundingWhitespace) {
    // Table: lstrip, rstrip, expected splits of "a  <m>  b".
    const std::vector<std::tuple<bool, bool, std::vector<std::string>>> table = {
        {false, false, {"a  ", "<m>|5", "  b"}},
        {true, false, {"a", "  <m>|5", "  b"}},
        {false, true, {"a  ", "<m>  |5", "b"}},
        {true, true, {"a", "  <m>  |5", "b"}},
    };
    for (const auto& [lstrip, rstrip, expected] : table) {
        const AddedVocabulary vocabulary(nlohmann::json::array({token(5, "<m>", lstrip, rstrip)}), nullptr);
        EXPECT_EQ(run(vocabulary, "a  <m>  b"), expected) << lstrip << rstrip;
    }
}

TEST(AddedVocabularyTest, SingleWordOnlyMatchesWholeWords) {
    const AddedVocabulary vocabulary(nlohmann::json::array({token(7, "cat", false, false, true)}), nullptr);
    EXPECT_EQ(run(vocabulary, "a cat!"), (std::vector<std::string>{"a ", "cat|7", "!"}));
    EXPECT_EQ(run(vocabulary, "concat cats"), (std::vector<std::string>{"concat cats"}));
}

TEST(AddedVocabularyTest, NormalizedTokensAreMatchedInNormalizedText) {
    const auto lowercase = Normalizer::fromJson({{"type", "Lowercase"}});
    const AddedVocabulary vocabulary(nlohmann::json::array({token(3, "HeLLo", false, false, false, true), token(4, "<X>")}),
                                     lowercase.get());
    // Raw matching sees only the unnormalized token; normalized matching sees "hello".
    EXPECT_EQ(run(vocabulary, "say hello<X>"), (std::vector<std::string>{"say hello", "<X>|4"}));
    EXPECT_EQ(run(vocabulary, "say hello", true), (std::vector<std::string>{"say ", "hello|3"}));
    EXPECT_EQ(vocabulary.idOf("HeLLo"), 3u);
    EXPECT_EQ(vocabulary.byId(4)->content, "<X>");
}

} // namespace
