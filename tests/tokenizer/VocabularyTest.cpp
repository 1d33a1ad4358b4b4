// SPDX-License-Identifier: GPL-3.0-or-later
// Vocabulary (a model's text <-> id table, each text stored once) against std::unordered_map and a by-id
// vector, the structures it replaced, on the same additions: holes in the ids, a text given twice (the first id
// stays), an id given twice (the last text stays), and enough texts to grow the index many times.
#include "Vocabulary.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

using kvscope::tokenizer::Vocabulary;

TEST(VocabularyTest, FindsTextsAndIdsAsAMapAndAByIdTableDo) {
    Vocabulary vocabulary;
    std::unordered_map<std::string, std::uint32_t> byText;
    std::vector<std::string> byId;
    std::vector<bool> present;
    std::mt19937 random(5);
    std::uniform_int_distribution<int> letter('a', 'e');
    std::uniform_int_distribution<int> length(1, 20);
    std::uniform_int_distribution<std::uint32_t> id(0, 30000);
    for (int i = 0; i < 20000; ++i) {
        std::string text;
        for (int n = length(random); n > 0; --n) {
            text.push_back(static_cast<char>(letter(random)));
        }
        const std::uint32_t value = i % 7 == 0 ? static_cast<std::uint32_t>(i / 2) : id(random);
        vocabulary.add(text, value);
        byText.try_emplace(text, value);
        if (value >= byId.size()) {
            byId.resize(value + 1);
            present.resize(value + 1);
        }
        byId[value] = text;
        present[value] = true;
    }
    ASSERT_EQ(vocabulary.idCount(), byId.size());
    for (const auto& [text, value] : byText) {
        ASSERT_EQ(vocabulary.find(text), value) << text;
    }
    for (std::uint32_t value = 0; value < byId.size(); ++value) {
        const std::string* text = vocabulary.token(value);
        ASSERT_EQ(text != nullptr, present[value]) << value;
        if (text != nullptr) {
            EXPECT_EQ(*text, byId[value]);
        }
    }
    EXPECT_EQ(vocabulary.token(static_cast<std::uint32_t>(byId.size())), nullptr);
    EXPECT_EQ(vocabulary.find("abcdefabcdefabcdefabcdefz"), std::nullopt);
    EXPECT_EQ(vocabulary.find(""), std::nullopt);
}

TEST(VocabularyTest, AnEmptyVocabularyFindsNothing) {
    const Vocabulary vocabulary;
    EXPECT_EQ(vocabulary.find("a"), std::nullopt);
    EXPECT_EQ(vocabulary.token(0), nullptr);
    EXPECT_EQ(vocabulary.idCount(), 0u);
}

TEST(VocabularyTest, TheFirstIdOfATextAndTheLastTextOfAnIdStay) {
    Vocabulary vocabulary;
    vocabulary.add("a", 3);
    vocabulary.add("a", 5);
    vocabulary.add("b", 3);
    vocabulary.add("", 1);
    EXPECT_EQ(vocabulary.find("a"), 3u);
    EXPECT_EQ(vocabulary.find("b"), 3u);
    EXPECT_EQ(vocabulary.find(""), 1u);
    EXPECT_EQ(*vocabulary.token(3), "b");
    EXPECT_EQ(*vocabulary.token(5), "a");
    EXPECT_EQ(vocabulary.token(0), nullptr);
    EXPECT_EQ(vocabulary.idCount(), 6u);
}

} // namespace
