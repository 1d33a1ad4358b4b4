// SPDX-License-Identifier: GPL-3.0-or-later
// kvscope's tokenizer against Hugging Face's own JS implementation (@huggingface/tokenizers) on the
// real Llama 3, Qwen 3, Gemma 3 and Llama 2 (Mistral vocabulary) tokenizer files, plus a small Unigram
// tokenizer kept in tests/tokenizer/unigram-mini: the same ids for every corpus text, the same text
// for every id sequence. Fixtures come from
// scripts/tokenizer-fixtures.sh (a ctest fixture runs it); without them the tests skip. ctest runs it a
// second time on the same texts as `tokenizers`, the Rust library, wrote them (tests/peers), where a missing
// fixture fails (KVSCOPE_TOKENIZER_FIXTURES_REQUIRED).
#include "kvscope/tokenizer/Tokenizer.h"
#include "kvscope/tokenizer/TokenizerError.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace {

using kvscope::tokenizer::Tokenizer;

std::filesystem::path fixturesDir() {
    if (const char* dir = std::getenv("KVSCOPE_TOKENIZER_FIXTURES")) {
        return dir;
    }
    return KVSCOPE_TOKENIZER_FIXTURES_DIR;
}

std::string readFile(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

// Shows where two id lists part, so a failure names the first differing position.
std::string firstDifference(const std::vector<int>& expected, const std::vector<int>& actual) {
    std::size_t i = 0;
    while (i < expected.size() && i < actual.size() && expected[i] == actual[i]) {
        ++i;
    }
    std::ostringstream out;
    out << "first difference at position " << i << " of " << expected.size() << " (expected ";
    out << (i < expected.size() ? std::to_string(expected[i]) : "end") << ", got ";
    out << (i < actual.size() ? std::to_string(actual[i]) : "end") << ")";
    return out.str();
}

class TokenizerConformanceTest : public ::testing::TestWithParam<std::string> {};

TEST_P(TokenizerConformanceTest, MatchesTheOracle) {
    const std::filesystem::path fixture = fixturesDir() / (GetParam() + ".json");
    if (!std::filesystem::exists(fixture) && std::getenv("KVSCOPE_TOKENIZER_FIXTURES_REQUIRED") != nullptr) {
        FAIL() << "no fixture " << fixture << " from the peer that wrote this folder";
    }
    if (!std::filesystem::exists(fixture)) {
        GTEST_SKIP() << "no fixture " << fixture << ": run scripts/tokenizer-fixtures.sh (needs npm) to write it";
    }
    const nlohmann::json json = nlohmann::json::parse(readFile(fixture));
    const std::filesystem::path tokenizerJson =
        json.contains("repo_relative") && json["repo_relative"].is_string()
            ? std::filesystem::path(KVSCOPE_SOURCE_DIR) / json["repo_relative"].get<std::string>()
            : std::filesystem::path(json.at("tokenizer_json").get<std::string>());
    if (!std::filesystem::exists(tokenizerJson)) {
        GTEST_SKIP() << "the fixture's tokenizer file " << tokenizerJson << " is gone: rerun scripts/tokenizer-fixtures.sh";
    }
    const Tokenizer tokenizer = Tokenizer::fromPath(tokenizerJson);

    std::size_t encodePassed = 0;
    std::size_t encodeTotal = 0;
    for (const auto& item : json.at("encode")) {
        const std::string name = item.at("name");
        const std::string text = item.at("text");
        for (const bool addSpecial : {true, false}) {
            const auto expected = item.at(addSpecial ? "ids" : "ids_no_special").get<std::vector<int>>();
            const auto encoding = tokenizer.encode(text, addSpecial);
            const std::vector<int> actual(encoding.ids.begin(), encoding.ids.end());
            ++encodeTotal;
            EXPECT_EQ(actual, expected) << GetParam() << " encode '" << name << "' (special tokens "
                                        << (addSpecial ? "on" : "off") << "): " << firstDifference(expected, actual);
            encodePassed += actual == expected ? 1 : 0;
            // Offsets must stay inside the text and tokens must match ids.
            ASSERT_EQ(encoding.tokens.size(), encoding.ids.size());
            for (const auto& [begin, end] : encoding.offsets) {
                ASSERT_LE(begin, end) << name;
                ASSERT_LE(end, text.size()) << name;
            }
        }
    }
    std::size_t decodePassed = 0;
    std::size_t decodeTotal = 0;
    for (const auto& item : json.at("decode")) {
        const std::string name = item.at("name");
        const auto ids = item.at("ids").get<std::vector<std::int32_t>>();
        for (const bool skip : {false, true}) {
            const std::string expected = item.at(skip ? "text_skip_special" : "text");
            const std::string actual = tokenizer.decode(ids, skip);
            ++decodeTotal;
            EXPECT_EQ(actual, expected) << GetParam() << " decode '" << name << "' (skip special " << skip << ")";
            decodePassed += actual == expected ? 1 : 0;
        }
    }
    std::cout << "[ conformance ] " << GetParam() << " vs " << json.at("oracle").get<std::string>() << ": encode "
              << encodePassed << "/" << encodeTotal << ", decode " << decodePassed << "/" << decodeTotal << "\n";
}

INSTANTIATE_TEST_SUITE_P(RealTokenizers, TokenizerConformanceTest,
                         ::testing::Values("llama3", "qwen3", "gemma3", "llama2", "unigram-mini"),
                         [](const auto& info) {
                             std::string name = info.param;
                             std::replace(name.begin(), name.end(), '-', '_'); // gtest names are identifiers
                             return name;
                         });

} // namespace
