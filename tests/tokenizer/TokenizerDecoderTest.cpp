// SPDX-License-Identifier: GPL-3.0-or-later
// Tests of kvscope::tokenizer::Decoder (named apart from the model library's DecoderTest target).
#include "Decoder.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

using kvscope::tokenizer::Decoder;

std::vector<std::string> runInTokenizerDecoder(const nlohmann::json& json, std::vector<std::string> tokens,
                             const std::unordered_set<std::string>* added = nullptr) {
    Decoder::fromJson(json, added)->decodeChain(tokens);
    return tokens;
}

TEST(TokenizerDecoderTest, ByteLevelJoinsBytesAndPassesAddedTokens) {
    const std::unordered_set<std::string> added = {"<|eot|>"};
    EXPECT_EQ(runInTokenizerDecoder({{"type", "ByteLevel"}}, {"Hello", "\u0120caf", "\u00c3\u00a9", "<|eot|>", "\u010a"}, &added),
              (std::vector<std::string>{"Hello caf\u00e9", "<|eot|>", "\n"}));
    // Half a character decodes as U+FFFD (lossy UTF-8).
    EXPECT_EQ(runInTokenizerDecoder({{"type", "ByteLevel"}}, {"a\u00c3"}), (std::vector<std::string>{"a\xEF\xBF\xBD"}));
}

TEST(TokenizerDecoderTest, MetaspaceReplacesAndStripsTheFirstSpace) {
    EXPECT_EQ(runInTokenizerDecoder({{"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", "always"}}, {"\u2581Hey", "\u2581friend"}),
              (std::vector<std::string>{"Hey", " friend"}));
    EXPECT_EQ(runInTokenizerDecoder({{"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", "never"}}, {"\u2581Hey"}),
              (std::vector<std::string>{" Hey"}));
}

TEST(TokenizerDecoderTest, ByteFallbackDecodesRunsOfByteTokens) {
    EXPECT_EQ(runInTokenizerDecoder({{"type", "ByteFallback"}}, {"a", "<0xC3>", "<0xA9>", "b", "<0x0A>"}),
              (std::vector<std::string>{"a", "\u00e9", "b", "\n"}));
    // An invalid run becomes one U+FFFD per byte token, as Hugging Face's Rust decoder writes.
    EXPECT_EQ(runInTokenizerDecoder({{"type", "ByteFallback"}}, {"<0xC3>", "<0x41>", "x"}),
              (std::vector<std::string>{"\uFFFD", "\uFFFD", "x"}));
    EXPECT_EQ(runInTokenizerDecoder({{"type", "ByteFallback"}}, {"<0xZZ>", "<0x4>"}), (std::vector<std::string>{"<0xZZ>", "<0x4>"}));
}

TEST(TokenizerDecoderTest, FuseStripReplaceSequence) {
    EXPECT_EQ(runInTokenizerDecoder({{"type", "Fuse"}}, {"a", "b", "c"}), (std::vector<std::string>{"abc"}));
    EXPECT_EQ(runInTokenizerDecoder({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}, {"  a ", " b"}),
              (std::vector<std::string>{" a ", "b"}));
    EXPECT_EQ(runInTokenizerDecoder({{"type", "Strip"}, {"content", " "}, {"start", 0}, {"stop", 2}}, {"a   "}), (std::vector<std::string>{"a "}));
    EXPECT_EQ(runInTokenizerDecoder({{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}}, {"\u2581a\u2581\u2581b"}),
              (std::vector<std::string>{" a  b"}));
    // Llama 2's decoder.
    const nlohmann::json llama2 = {{"type", "Sequence"},
                                   {"decoders",
                                    {{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
                                     {{"type", "ByteFallback"}},
                                     {{"type", "Fuse"}},
                                     {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}};
    EXPECT_EQ(runInTokenizerDecoder(llama2, {"\u2581Hello", "\u2581w", "or", "ld", "<0xF0>", "<0x9F>", "<0x98>", "<0x80>"}),
              (std::vector<std::string>{"Hello world\U0001F600"}));
}

} // namespace
