// SPDX-License-Identifier: GPL-3.0-or-later
// A checkpoint folder with only a SentencePiece tokenizer.model: kvscope reads it with libsentencepiece.
// The model is trained here from the repo's prose with Debian's trainer, so no binary is committed.
#include "SentencePieceModel.h"
#include "kvscope/tokenizer/Tokenizer.h"
#include "kvscope/tokenizer/TokenizerError.h"

#include <gtest/gtest.h>
#include <sentencepiece_trainer.h>

#include <filesystem>
#include <fstream>

namespace {

using kvscope::tokenizer::SentencePieceModel;
using kvscope::tokenizer::Tokenizer;
using kvscope::tokenizer::TokenizerError;

class SentencePieceModelTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        // In the build tree: the cli test of the same model in a LibTorch process reads it (ctest fixture).
        folder() = KVSCOPE_SENTENCEPIECE_TEST_DIR;
        std::filesystem::remove_all(folder());
        std::filesystem::create_directories(folder());
        const std::string input = KVSCOPE_SOURCE_DIR "/tests/tokenizer/long-prose.txt";
        const auto status = sentencepiece::SentencePieceTrainer::Train(
            "--input=" + input + " --model_prefix=" + (folder() / "tokenizer").string() +
            " --vocab_size=400 --model_type=bpe --byte_fallback=true --character_coverage=1.0 --minloglevel=2");
        ASSERT_TRUE(status.ok()) << status.ToString();
    }
    static std::filesystem::path& folder() {
        static std::filesystem::path path;
        return path;
    }
};

TEST_F(SentencePieceModelTest, FolderWithOnlyTokenizerModelEncodesAndDecodes) {
    const Tokenizer tokenizer = Tokenizer::fromPath(folder());
    EXPECT_EQ(tokenizer.modelType(), "SentencePiece");
    EXPECT_EQ(tokenizer.vocabSize(), 400u);
    const std::string text = "The cache keeps keys and values. \u00e9\U0001F600";
    const auto encoding = tokenizer.encode(text);
    ASSERT_GT(encoding.size(), 3u);
    // bos first (Llama's convention when no config says otherwise), then pieces covering the text.
    EXPECT_EQ(encoding.ids[0], tokenizer.bosId());
    EXPECT_EQ(encoding.tokens[1].rfind("\u2581", 0), 0u) << encoding.tokens[1];
    EXPECT_EQ(encoding.offsets.back().second, text.size());
    for (std::size_t i = 1; i < encoding.size(); ++i) {
        EXPECT_LE(encoding.offsets[i].first, encoding.offsets[i].second);
        EXPECT_EQ(tokenizer.idToToken(encoding.ids[i]), encoding.tokens[i]);
    }
    // Characters outside the prose's pieces fall back to bytes.
    EXPECT_NE(std::find(encoding.tokens.begin(), encoding.tokens.end(), "<0xF0>"), encoding.tokens.end());
    EXPECT_EQ(tokenizer.decode(encoding.ids, true), text);
    EXPECT_EQ(tokenizer.encode(text, false).size(), encoding.size() - 1);
    EXPECT_EQ(tokenizer.tokenToId("<s>"), tokenizer.bosId());
    EXPECT_FALSE(tokenizer.tokenToId("no such piece").has_value());
}

TEST_F(SentencePieceModelTest, ConfigDecidesBosAndEos) {
    std::ofstream(folder() / "tokenizer_config.json") << R"({"add_bos_token": false, "add_eos_token": true})";
    const Tokenizer tokenizer = Tokenizer::fromPath(folder() / "tokenizer.model");
    std::filesystem::remove(folder() / "tokenizer_config.json");
    const auto encoding = tokenizer.encode("keys");
    EXPECT_NE(encoding.ids.front(), tokenizer.bosId());
    EXPECT_EQ(encoding.ids.back(), tokenizer.eosId());
}

TEST_F(SentencePieceModelTest, RefusesABrokenModelFile) {
    const auto broken = folder() / "broken.model";
    std::ofstream(broken) << "not a protobuf";
    EXPECT_THROW(SentencePieceModel{broken}, TokenizerError);
}

} // namespace
