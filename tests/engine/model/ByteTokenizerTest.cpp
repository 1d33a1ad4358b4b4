// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/model/ByteTokenizer.h"
#include "kvscope/model/ModelError.h"

#include <gtest/gtest.h>

using kvscope::model::ByteTokenizer;

TEST(ByteTokenizerTest, EncodesBytesAfterBos) {
    EXPECT_EQ(ByteTokenizer::encode("Hi"), (std::vector<int64_t>{256, 72, 105}));
    EXPECT_EQ(ByteTokenizer::encode("Hi", false), (std::vector<int64_t>{72, 105}));
    // UTF-8 is bytes: "é" is two tokens.
    EXPECT_EQ(ByteTokenizer::encode("\xc3\xa9", false), (std::vector<int64_t>{0xc3, 0xa9}));
}

TEST(ByteTokenizerTest, DecodeDropsSpecialsAndRoundTrips) {
    const std::string text = "KV caches \xe2\x9c\x93\n";
    EXPECT_EQ(ByteTokenizer::decode(ByteTokenizer::encode(text)), text);
    EXPECT_EQ(ByteTokenizer::decode({256, 65, 257, 258}), "A");
    EXPECT_EQ(ByteTokenizer::tokenText(257), "<eos>");
    EXPECT_EQ(ByteTokenizer::tokenText(66), "B");
}

TEST(ByteTokenizerTest, RefusesIdsOutsideTheVocabulary) {
    try {
        ByteTokenizer::decode({65, 300});
        FAIL() << "id 300 was decoded";
    } catch (const kvscope::model::ModelError& error) {
        EXPECT_NE(std::string(error.what()).find("300"), std::string::npos);
        EXPECT_NE(std::string(error.what()).find("0-258"), std::string::npos);
    }
    // render() is for any vocabulary.
    EXPECT_EQ(ByteTokenizer::render({65, 300, 257}), "A<id:300>");
}
