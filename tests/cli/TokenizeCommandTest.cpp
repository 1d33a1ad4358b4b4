// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cli/TokenizeCommand.h"

#include "TokenizerTestJson.h"
#include "kvscope/tokenizer/Tokenizer.h"

#include <CLI/CLI.hpp>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace {

using kvscope::cli::TokenizeCommand;
using kvscope::tokenizer::testing::TokenizerTestJson;

class TokenizeCommandTest : public ::testing::Test {
protected:
    void SetUp() override {
        m_folder = std::filesystem::temp_directory_path() / "kvscope-tokenize-command";
        std::filesystem::create_directories(m_folder);
        std::ofstream(m_folder / "tokenizer.json")
            << TokenizerTestJson::byteLevel({"H e", "l l", "He ll", "Hell o", "\u0120 w", "o r", "l d", "\u0120w or", "\u0120wor ld"}).dump();
        std::ofstream(m_folder / "tokenizer_config.json") << R"({"eos_token": "<|eot|>"})";
    }
    void TearDown() override { std::filesystem::remove_all(m_folder); }

    // Parses argv as kvscope-cli would and runs the chosen subcommand.
    int run(std::vector<std::string> args, std::string& out, std::string& err) {
        CLI::App app;
        TokenizeCommand::Options options;
        const auto [tokenize, detokenize] = TokenizeCommand::addSubcommands(app, options);
        args.insert(args.begin(), "kvscope-cli");
        std::vector<const char*> argv;
        for (const auto& arg : args) {
            argv.push_back(arg.c_str());
        }
        app.parse(static_cast<int>(argv.size()), argv.data());
        std::ostringstream outStream;
        std::ostringstream errStream;
        const int code = *tokenize ? TokenizeCommand::executeTokenize(options, outStream, errStream)
                                   : TokenizeCommand::executeDetokenize(options, outStream, errStream);
        out = outStream.str();
        err = errStream.str();
        return code;
    }

    std::filesystem::path m_folder;
};

TEST_F(TokenizeCommandTest, TokenizePrintsIdsTokensAndOffsets) {
    std::string out;
    std::string err;
    ASSERT_EQ(run({"tokenize", "--tokenizer", m_folder.string(), "Hello world<|eot|>"}, out, err), 0) << err;
    const auto json = nlohmann::json::parse(out);
    EXPECT_EQ(json.at("tokens"), nlohmann::json({"Hello", "\u0120world", "<|eot|>"}));
    EXPECT_EQ(json.at("ids").at(2), 1000);
    EXPECT_EQ(json.at("offsets"), nlohmann::json::parse("[[0, 5], [5, 11], [11, 18]]"));
}

TEST_F(TokenizeCommandTest, TokenizeReadsAFileAndDetokenizeGoesBack) {
    const auto file = m_folder / "prompt.txt";
    std::ofstream(file) << "Hello world\n";
    std::string out;
    std::string err;
    ASSERT_EQ(run({"tokenize", "--tokenizer", (m_folder / "tokenizer.json").string(), "--file", file.string()}, out, err), 0) << err;
    std::vector<std::string> args = {"detokenize", "--tokenizer", m_folder.string()};
    const auto encoded = nlohmann::json::parse(out);
    for (const auto& id : encoded.at("ids")) {
        args.push_back(std::to_string(id.get<int>()));
    }
    args.push_back("1000");
    ASSERT_EQ(run(args, out, err), 0) << err;
    EXPECT_EQ(nlohmann::json::parse(out).at("text"), "Hello world\n<|eot|>");
    args.push_back("--skip-special-tokens");
    ASSERT_EQ(run(args, out, err), 0) << err;
    EXPECT_EQ(nlohmann::json::parse(out).at("text"), "Hello world\n");
}

TEST_F(TokenizeCommandTest, BadInputExitsWithTwoAndAMessage) {
    std::string out;
    std::string err;
    EXPECT_EQ(run({"tokenize", "--tokenizer", (m_folder / "missing").string(), "hi"}, out, err), 2);
    EXPECT_NE(err.find("no such file or folder"), std::string::npos) << err;
    EXPECT_EQ(run({"detokenize", "--tokenizer", m_folder.string(), "99999"}, out, err), 2);
    EXPECT_NE(err.find("outside the vocabulary"), std::string::npos) << err;
    std::ofstream(m_folder / "tokenizer.json") << R"({"model": {"type": "WordPiece"}})";
    EXPECT_EQ(run({"tokenize", "--tokenizer", m_folder.string(), "hi"}, out, err), 2);
    EXPECT_NE(err.find("model: unsupported type 'WordPiece' (supported: BPE, Unigram)"), std::string::npos) << err;
}

} // namespace
