// SPDX-License-Identifier: GPL-3.0-or-later
// GgufTokenizerJson on a SentencePiece (`llama`) vocabulary of twelve pieces built in memory: the ids of a literal
// table, worked out by hand from llama.cpp's rules (spaces as U+2581 with one in front, after special tokens too;
// the best-scoring join first; byte tokens for what no piece covers), and the text decoded back. The peer test
// (tests/peers/GgufTokenizerPeerTest.cpp) checks the same against llama.cpp on Llama 2's vocabulary.
#include "kvscope/gguf/GgufError.h"
#include "kvscope/gguf/GgufFile.h"
#include "kvscope/gguf/GgufTokenizerJson.h"
#include "kvscope/tokenizer/Tokenizer.h"
#include "GgufTestWriter.h"

#include <gtest/gtest.h>

using kvscope::gguf::GgufFile;
using kvscope::gguf::GgufTokenizerJson;

namespace {

/// A vocabulary-only GGUF file: tokenizer.ggml.model `model`, twelve pieces, their scores and types.
GgufFile vocabulary(const std::string& model) {
    const std::vector<std::string> tokens = {"<unk>", "<s>", "</s>", "<0x41>", "\xE2\x96\x81", "a", "b", "ab",
                                             "\xE2\x96\x81" "a", "\xE2\x96\x81" "ab", "c", "bc"};
    const std::vector<float> scores = {0, 0, 0, 0, -4, -5, -6, -7, -8, -9, -10, -3};
    const std::vector<int32_t> types = {2, 3, 3, 6, 1, 1, 1, 1, 1, 1, 1, 1};
    kvscope::testing::GgufTestWriter w;
    w.header(3, 0, 6);
    w.string("tokenizer.ggml.model").put<uint32_t>(8).string(model);
    w.string("tokenizer.ggml.tokens").put<uint32_t>(9).put<uint32_t>(8).put<uint64_t>(tokens.size());
    for (const std::string& token : tokens) {
        w.string(token);
    }
    w.string("tokenizer.ggml.scores").put<uint32_t>(9).put<uint32_t>(6).put<uint64_t>(scores.size());
    for (float score : scores) {
        w.put(score);
    }
    w.string("tokenizer.ggml.token_type").put<uint32_t>(9).put<uint32_t>(5).put<uint64_t>(types.size());
    for (int32_t type : types) {
        w.put(type);
    }
    w.string("tokenizer.ggml.unknown_token_id").put<uint32_t>(4).put<uint32_t>(0);
    w.string("tokenizer.ggml.bos_token_id").put<uint32_t>(4).put<uint32_t>(1);
    return GgufFile::fromBytes(w.bytes, "spm.gguf");
}

} // namespace

TEST(GgufTokenizerJsonTest, SentencePieceTokenizesAsLlamaCppDoes) {
    const GgufFile file = vocabulary("llama");
    const auto text = GgufTokenizerJson::fromMetadata(file.metadata(), file.name());
    const auto tokenizer = kvscope::tokenizer::Tokenizer::fromJson(text.tokenizerJson, text.configJson);
    struct Case {
        const char* text;
        std::vector<int32_t> ids;
        const char* decoded;
    };
    const std::vector<Case> cases = {
        // "▁ab▁ab": a+b (score -7) joins before ▁+a (-8), then ▁+ab (-9).
        {"ab ab", {9, 9}, "ab ab"},
        // No piece covers "A": its byte token. Decoding drops the ▁ put in front.
        {"A", {4, 3}, "A"},
        // A special token is matched whole, and the text after it gets its own leading ▁.
        {"<s>a", {1, 8}, "<s> a"},
        // b+c (score -3) joins first, then ▁+a: "▁abc" is no piece. Lowest score first would give ▁a, ▁ab, then c.
        {"abc", {8, 11}, "abc"},
        // Neither "▁b" nor "ba" is a piece: three pieces.
        {"ba", {4, 6, 5}, "ba"},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.text);
        EXPECT_EQ(tokenizer.encode(c.text, /*addSpecialTokens=*/false).ids, c.ids);
        EXPECT_EQ(tokenizer.decode(c.ids, /*skipSpecialTokens=*/false), c.decoded);
    }
    // llama.cpp adds bos to a SentencePiece model's text unless the file says otherwise.
    EXPECT_EQ(tokenizer.encode("ab", /*addSpecialTokens=*/true).ids, (std::vector<int32_t>{1, 9}));
}

TEST(GgufTokenizerJsonTest, OtherModelsAreRefusedByName) {
    const GgufFile file = vocabulary("bert");
    try {
        (void)GgufTokenizerJson::fromMetadata(file.metadata(), file.name());
        FAIL() << "a `bert` tokenizer was accepted";
    } catch (const kvscope::gguf::GgufError& error) {
        EXPECT_NE(std::string(error.what()).find("`bert`"), std::string::npos) << error.what();
        EXPECT_NE(std::string(error.what()).find("`llama` (SentencePiece)"), std::string::npos) << error.what();
    }
}
