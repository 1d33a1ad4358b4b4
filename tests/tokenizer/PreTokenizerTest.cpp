// SPDX-License-Identifier: GPL-3.0-or-later
#include "PreTokenizer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

using kvscope::tokenizer::NormalizedString;
using kvscope::tokenizer::PreTokenizer;

struct Piece {
    std::string text;
    std::pair<std::uint32_t, std::uint32_t> offsets;
    bool operator==(const Piece&) const = default;
};

std::ostream& operator<<(std::ostream& out, const Piece& piece) {
    return out << "'" << piece.text << "'(" << piece.offsets.first << "," << piece.offsets.second << ")";
}

std::vector<Piece> runInPreTokenizer(const nlohmann::json& json, const std::string& text, std::uint32_t base = 0) {
    const auto preTokenizer = PreTokenizer::fromJson(json);
    std::vector<NormalizedString> pieces{NormalizedString(text, base)};
    preTokenizer->preTokenize(pieces);
    std::vector<Piece> out;
    for (const auto& piece : pieces) {
        const auto span = piece.originalSpan(0, piece.size());
        out.push_back({piece.text(), {span.start, span.end}});
    }
    return out;
}

std::vector<std::string> texts(const std::vector<Piece>& pieces) {
    std::vector<std::string> out;
    for (const auto& piece : pieces) {
        out.push_back(piece.text);
    }
    return out;
}

// Hugging Face's documented example for SplitDelimiterBehavior, pattern "-" on "the-final--countdown".
TEST(PreTokenizerTest, SplitBehavioursFollowTheDocumentedTable) {
    const std::string text = "the-final--countdown";
    const std::vector<std::pair<std::string, std::vector<std::string>>> table = {
        {"Removed", {"the", "final", "countdown"}},
        {"Isolated", {"the", "-", "final", "-", "-", "countdown"}},
        {"MergedWithPrevious", {"the-", "final-", "-", "countdown"}},
        {"MergedWithNext", {"the", "-final", "-", "-countdown"}},
        {"Contiguous", {"the", "-", "final", "--", "countdown"}},
    };
    for (const auto& [behaviour, expected] : table) {
        const nlohmann::json json = {{"type", "Split"}, {"pattern", {{"String", "-"}}}, {"behavior", behaviour}, {"invert", false}};
        EXPECT_EQ(texts(runInPreTokenizer(json, text)), expected) << behaviour;
    }
}

TEST(PreTokenizerTest, SplitInvertKeepsTheMatchesAsTheContent) {
    // Inverted, the pattern describes what to keep: "Removed" drops what lies between the matches.
    const nlohmann::json json = {{"type", "Split"}, {"pattern", {{"Regex", "\\p{L}+"}}}, {"behavior", "Removed"}, {"invert", true}};
    EXPECT_EQ(texts(runInPreTokenizer(json, "ab, cd!")), (std::vector<std::string>{"ab", "cd"}));
    const nlohmann::json merged = {{"type", "Split"}, {"pattern", {{"Regex", "\\p{L}+"}}}, {"behavior", "MergedWithPrevious"}, {"invert", true}};
    EXPECT_EQ(texts(runInPreTokenizer(merged, "ab, cd!")), (std::vector<std::string>{"ab, ", "cd!"}));
    const nlohmann::json isolated = {{"type", "Split"}, {"pattern", {{"Regex", "\\s+"}}}, {"behavior", "Removed"}, {"invert", false}};
    EXPECT_EQ(texts(runInPreTokenizer(isolated, "a  b\tc")), (std::vector<std::string>{"a", "b", "c"}));
}

TEST(PreTokenizerTest, Llama3RegexSplitsWithOffsets) {
    const nlohmann::json json = {
        {"type", "Split"},
        {"pattern", {{"Regex", "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}}},
        {"behavior", "Isolated"},
        {"invert", false}};
    const std::vector<Piece> expected = {
        {"It", {10, 12}}, {"'S", {12, 14}}, {" ", {14, 15}}, {"123", {15, 18}}, {"45", {18, 20}},
        {"  ", {20, 22}}, {" ok", {22, 25}}, {"!\n", {25, 27}}};
    EXPECT_EQ(runInPreTokenizer(json, "It'S 12345   ok!\n", 10), expected);
}

TEST(PreTokenizerTest, MetaspacePrependSchemes) {
    const auto metaspace = [](const std::string& scheme, bool split) {
        return nlohmann::json{{"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", scheme}, {"split", split}};
    };
    EXPECT_EQ(texts(runInPreTokenizer(metaspace("always", true), "Hey friend")), (std::vector<std::string>{"\u2581Hey", "\u2581friend"}));
    EXPECT_EQ(texts(runInPreTokenizer(metaspace("never", true), "Hey friend")), (std::vector<std::string>{"Hey", "\u2581friend"}));
    EXPECT_EQ(texts(runInPreTokenizer(metaspace("first", true), "Hey friend")), (std::vector<std::string>{"\u2581Hey", "\u2581friend"}));
    // "first" prepends only to text that starts the input (after an added token it does not).
    EXPECT_EQ(texts(runInPreTokenizer(metaspace("first", true), "Hey friend", 5)), (std::vector<std::string>{"Hey", "\u2581friend"}));
    EXPECT_EQ(texts(runInPreTokenizer(metaspace("always", true), "Hey friend", 5)), (std::vector<std::string>{"\u2581Hey", "\u2581friend"}));
    EXPECT_EQ(texts(runInPreTokenizer(metaspace("always", false), "Hey  friend")), (std::vector<std::string>{"\u2581Hey\u2581\u2581friend"}));
    // Text already starting with a space gets no second metaspace.
    EXPECT_EQ(texts(runInPreTokenizer(metaspace("always", true), " Hey")), (std::vector<std::string>{"\u2581Hey"}));
    // Offsets: the prepended metaspace belongs to the first character, replaced spaces to themselves.
    const std::vector<Piece> expected = {{"\u2581Hey", {0, 3}}, {"\u2581friend", {3, 10}}};
    EXPECT_EQ(runInPreTokenizer(metaspace("always", true), "Hey friend"), expected);
}

TEST(PreTokenizerTest, DigitsContiguousOrIndividual) {
    EXPECT_EQ(texts(runInPreTokenizer({{"type", "Digits"}, {"individual_digits", false}}, "abc123de4")),
              (std::vector<std::string>{"abc", "123", "de", "4"}));
    EXPECT_EQ(texts(runInPreTokenizer({{"type", "Digits"}, {"individual_digits", true}}, "abc123de4")),
              (std::vector<std::string>{"abc", "1", "2", "3", "de", "4"}));
}

TEST(PreTokenizerTest, ByteLevelMapsBytesAndKeepsCharacterOffsets) {
    const nlohmann::json json = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
    // GPT-2's regex, then bytes as printable characters: space -> Ġ, é (2 bytes) -> Ã©.
    const std::vector<Piece> expected = {{"Hello", {0, 5}}, {"\u0120caf\u00c3\u00a9", {5, 11}}, {"!", {11, 12}}};
    EXPECT_EQ(runInPreTokenizer(json, "Hello caf\u00e9!"), expected);
    const nlohmann::json prefixed = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", false}};
    EXPECT_EQ(texts(runInPreTokenizer(prefixed, "Hi you")), (std::vector<std::string>{"\u0120Hi\u0120you"}));
}

TEST(PreTokenizerTest, SequenceAppliesInOrder) {
    const nlohmann::json json = {{"type", "Sequence"},
                                 {"pretokenizers",
                                  {{{"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "Removed"}},
                                   {{"type", "Digits"}, {"individual_digits", true}}}}};
    EXPECT_EQ(texts(runInPreTokenizer(json, "ab12 c3")), (std::vector<std::string>{"ab", "1", "2", "c", "3"}));
}

TEST(PreTokenizerTest, NullGivesNoPreTokenizer) { EXPECT_EQ(PreTokenizer::fromJson(nullptr), nullptr); }

} // namespace
