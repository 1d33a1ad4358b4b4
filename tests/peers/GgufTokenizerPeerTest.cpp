// SPDX-License-Identifier: GPL-3.0-or-later
// llama.cpp's own tokenizer as the oracle of the tokenizer kvscope builds from a GGUF file's metadata
// (gguf::GgufTokenizerJson): on SmolLM2-135M-Instruct's GGUF and the tokenizer conformance texts, the same ids
// (special tokens in the text included) as llama-cpp-python's vocab_only tokenize, and decoding gives the text
// back as llama.cpp's detokenize does.
#include "kvscope/gguf/GgufFile.h"
#include "kvscope/gguf/GgufTokenizerJson.h"
#include "kvscope/tokenizer/Tokenizer.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

TEST(GgufTokenizerPeerTest, SmolLM2TokenizesAsLlamaCpp) {
    char pattern[] = "/tmp/kvscope-gguf-tokenizer-XXXXXX";
    const std::filesystem::path directory = ::mkdtemp(pattern);
    const std::filesystem::path source(KVSCOPE_SOURCE_DIR);
    const std::filesystem::path out = directory / "llamacpp.json";
    const std::string command = "'" + (source / "tests/peers/peer-python.sh").string() + "' '" +
                                (source / "tests/peers/gguf_tokenizer_fixtures.py").string() + "' '" +
                                (source / "tests/tokenizer/corpus.json").string() + "' '" + out.string() +
                                "' smollm2";
    ASSERT_EQ(std::system(command.c_str()), 0) << "the peer (gguf_tokenizer_fixtures.py, llama.cpp) failed: " << command;
    std::ifstream in(out);
    const nlohmann::json record = nlohmann::json::parse(in);
    std::filesystem::remove_all(directory);
    const std::string peer = record.at("peer").get<std::string>();

    const kvscope::gguf::GgufFile file(record.at("file").get<std::string>());
    const auto text = kvscope::gguf::GgufTokenizerJson::fromMetadata(file.metadata(), file.name());
    const auto tokenizer = kvscope::tokenizer::Tokenizer::fromJson(text.tokenizerJson, text.configJson);
    int same = 0;
    for (const nlohmann::json& item : record.at("cases")) {
        const std::string name = item.at("name").get<std::string>();
        const std::string input = item.at("text").get<std::string>();
        const auto expected = item.at("ids").get<std::vector<int32_t>>();
        const auto encoding = tokenizer.encode(input, /*addSpecialTokens=*/true);
        EXPECT_EQ(encoding.ids, expected) << peer << ", case `" << name << "`";
        same += encoding.ids == expected;
        EXPECT_EQ(tokenizer.decode(expected, /*skipSpecialTokens=*/false), item.at("decoded").get<std::string>())
            << peer << ", case `" << name << "`: decoding";
    }
    EXPECT_EQ(same, static_cast<int>(record.at("cases").size()));
    EXPECT_GE(same, 40);
}
