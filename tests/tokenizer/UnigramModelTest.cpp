// SPDX-License-Identifier: GPL-3.0-or-later
#include "UnigramModel.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

using kvscope::tokenizer::ModelToken;
using kvscope::tokenizer::UnigramModel;

// "token(begin,end)"; unknown pieces keep their input text, shown as "[text]".
std::vector<std::string> runInUnigramModel(const UnigramModel& model, const std::string& word) {
    std::vector<ModelToken> tokens;
    model.tokenize(word, tokens);
    std::vector<std::string> out;
    for (const ModelToken& token : tokens) {
        const std::string text = token.textFromInput ? "[" + word.substr(token.begin, token.end - token.begin) + "]"
                                                     : *model.idToToken(token.id);
        out.push_back(text + "(" + std::to_string(token.begin) + "," + std::to_string(token.end) + ")");
    }
    return out;
}

TEST(UnigramModelTest, ViterbiPicksTheMostProbableSegmentation) {
    // log-probabilities: "ab" + "c" = -3.5 beats "a" + "bc" = -4 and "abc" is not there.
    const nlohmann::json json = {{"type", "Unigram"},
                                 {"unk_id", 0},
                                 {"vocab", nlohmann::json::parse(R"([["<unk>", 0.0], ["a", -2.0], ["b", -2.0], ["c", -2.0], ["ab", -1.5], ["bc", -2.0]])")}};
    const UnigramModel model(json);
    EXPECT_EQ(runInUnigramModel(model, "abc"), (std::vector<std::string>{"ab(0,2)", "c(2,3)"}));
    EXPECT_EQ(runInUnigramModel(model, "cab"), (std::vector<std::string>{"c(0,1)", "ab(1,3)"}));
    // Unknown characters become one fused unk (id 0) whose token is the text it covers.
    EXPECT_EQ(runInUnigramModel(model, "a\u00e9\u00e9b"), (std::vector<std::string>{"a(0,1)", "[\u00e9\u00e9](1,5)", "b(5,6)"}));
}

TEST(UnigramModelTest, ByteFallbackForUnknownCharacters) {
    nlohmann::json vocab = nlohmann::json::parse(R"([["<unk>", 0.0], ["a", -1.0]])");
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        vocab.push_back(nlohmann::json::array({name, -5.0}));
    }
    const UnigramModel model({{"type", "Unigram"}, {"unk_id", 0}, {"byte_fallback", true}, {"vocab", vocab}});
    EXPECT_EQ(runInUnigramModel(model, "a\u00e9"), (std::vector<std::string>{"a(0,1)", "<0xC3>(1,2)", "<0xA9>(2,3)"}));
}

} // namespace
