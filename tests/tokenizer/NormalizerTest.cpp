// SPDX-License-Identifier: GPL-3.0-or-later
#include "Normalizer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

using kvscope::tokenizer::NormalizedString;
using kvscope::tokenizer::Normalizer;

std::string normalize(const nlohmann::json& json, const std::string& text) {
    return Normalizer::fromJson(json)->normalizeText(text);
}

TEST(NormalizerTest, UnicodeForms) {
    // Table: form, input, output.
    const std::vector<std::tuple<std::string, std::string, std::string>> table = {
        {"NFC", "e\u0301", "\u00e9"},
        {"NFC", "\u00e9", "\u00e9"},
        {"NFD", "\u00e9", "e\u0301"},
        {"NFKC", "\ufb01ne \u2460 \uff41", "fine 1 a"},
        {"NFKC", "x\u00b2", "x2"},
        {"NFKD", "\u00bd", "1\u20442"},
        {"NFC", "\u212b", "\u00c5"}, // angstrom sign
    };
    for (const auto& [form, input, output] : table) {
        EXPECT_EQ(normalize({{"type", form}}, input), output) << form << " " << input;
    }
}

TEST(NormalizerTest, NfcKeepsOffsetsOfTheComposedCharacter) {
    const auto nfc = Normalizer::fromJson({{"type", "NFC"}});
    const NormalizedString out = nfc->normalize(NormalizedString("ae\u0301b", 0));
    ASSERT_EQ(out.text(), "a\u00e9b");
    // é (2 bytes) stands for e + U+0301 (1 + 2 bytes) at original [1, 4).
    EXPECT_EQ(out.originalSpan(1, 3).start, 1u);
    EXPECT_EQ(out.originalSpan(1, 3).end, 4u);
    EXPECT_EQ(out.originalSpan(3, 4).start, 4u);
}

TEST(NormalizerTest, ReplacePrependLowercaseStrip) {
    EXPECT_EQ(normalize({{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}}, "a b  c"),
              "a\u2581b\u2581\u2581c");
    EXPECT_EQ(normalize({{"type", "Replace"}, {"pattern", {{"Regex", "\\s+"}}}, {"content", " "}}, "a \t\n b"), "a b");
    EXPECT_EQ(normalize({{"type", "Prepend"}, {"prepend", "\u2581"}}, "Hi"), "\u2581Hi");
    EXPECT_EQ(normalize({{"type", "Prepend"}, {"prepend", "\u2581"}}, ""), "");
    EXPECT_EQ(normalize({{"type", "Lowercase"}}, "HeLLo \u00c9T\u00c9 \u0391\u0392"), "hello \u00e9t\u00e9 \u03b1\u03b2");
    EXPECT_EQ(normalize({{"type", "Strip"}, {"strip_left", true}, {"strip_right", true}}, " \t x y \n"), "x y");
    EXPECT_EQ(normalize({{"type", "Strip"}, {"strip_left", false}, {"strip_right", true}}, "  x  "), "  x");
}

TEST(NormalizerTest, SequenceIsLlama2Style) {
    const nlohmann::json json = {{"type", "Sequence"},
                                 {"normalizers",
                                  {{{"type", "Prepend"}, {"prepend", "\u2581"}},
                                   {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}}}}};
    const auto normalizer = Normalizer::fromJson(json);
    const NormalizedString out = normalizer->normalize(NormalizedString("Hi you", 7));
    EXPECT_EQ(out.text(), "\u2581Hi\u2581you");
    // The prepended metaspace aligns with 'H', the replaced space with the space.
    EXPECT_EQ(out.originalSpan(0, 3).start, 7u);
    EXPECT_EQ(out.originalSpan(0, 3).end, 8u);
    EXPECT_EQ(out.originalSpan(5, 8).start, 9u);
    EXPECT_EQ(out.originalSpan(5, 8).end, 10u);
}

TEST(NormalizerTest, NullGivesNoNormalizer) { EXPECT_EQ(Normalizer::fromJson(nullptr), nullptr); }

} // namespace
