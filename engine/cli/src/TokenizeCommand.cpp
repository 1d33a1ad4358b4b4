// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cli/TokenizeCommand.h"

#include "kvscope/tokenizer/Tokenizer.h"
#include "kvscope/tokenizer/TokenizerError.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <fstream>
#include <iostream>
#include <sstream>

namespace kvscope::cli {

namespace {

// Token strings are valid UTF-8, but a decoded text of cut-up ids is only as valid as the decoder
// makes it: never let one odd byte turn the whole answer into an exception.
std::string dumpJson(const nlohmann::json& json) { return json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

} // namespace

std::pair<CLI::App*, CLI::App*> TokenizeCommand::addSubcommands(CLI::App& app, Options& options) {
    CLI::App* tokenize = app.add_subcommand("tokenize", "Encode text with a Hugging Face tokenizer: JSON {ids, tokens, offsets}");
    tokenize->add_option("--tokenizer", options.tokenizer, "checkpoint folder, tokenizer.json or tokenizer.model")->required();
    tokenize->add_option("TEXT", options.text, "text to encode");
    tokenize->add_option("--file", options.file, "read the text from this file instead")->check(CLI::ExistingFile);
    tokenize->add_flag("--no-special-tokens", options.noSpecialTokens, "do not add bos/eos (the post-processor)");
    CLI::App* detokenize = app.add_subcommand("detokenize", "Decode token ids with a Hugging Face tokenizer: JSON {text}");
    detokenize->add_option("--tokenizer", options.tokenizer, "checkpoint folder, tokenizer.json or tokenizer.model")->required();
    detokenize->add_option("IDS", options.ids, "token ids")->required();
    detokenize->add_flag("--skip-special-tokens", options.skipSpecialTokens, "leave special tokens out of the text");
    return {tokenize, detokenize};
}

nlohmann::json TokenizeCommand::tokenize(const tokenizer::Tokenizer& tokenizer, std::string_view text, bool addSpecialTokens) {
    const tokenizer::Encoding encoding = tokenizer.encode(text, addSpecialTokens);
    nlohmann::json offsets = nlohmann::json::array();
    for (const auto& [begin, end] : encoding.offsets) {
        offsets.push_back({begin, end});
    }
    return {{"ids", encoding.ids}, {"tokens", encoding.tokens}, {"offsets", offsets}};
}

int TokenizeCommand::executeTokenize(const Options& options, std::ostream& out, std::ostream& err) {
    if (!options.file.empty() && !options.text.empty()) {
        err << "kvscope-cli tokenize: give TEXT or --file, not both\n";
        return 2;
    }
    std::string text = options.text;
    if (!options.file.empty()) {
        std::ifstream in(options.file, std::ios::binary);
        if (!in) {
            err << "kvscope-cli tokenize: cannot read " << options.file << "\n";
            return 2;
        }
        std::ostringstream buffer;
        buffer << in.rdbuf();
        text = buffer.str();
    }
    try {
        const auto tokenizer = tokenizer::Tokenizer::fromPath(options.tokenizer);
        out << dumpJson(tokenize(tokenizer, text, !options.noSpecialTokens)) << std::endl;
        return 0;
    } catch (const tokenizer::TokenizerError& error) {
        err << "kvscope-cli tokenize: " << error.what() << "\n";
        return 2;
    }
}

int TokenizeCommand::executeDetokenize(const Options& options, std::ostream& out, std::ostream& err) {
    try {
        const auto tokenizer = tokenizer::Tokenizer::fromPath(options.tokenizer);
        out << dumpJson({{"text", tokenizer.decode(options.ids, options.skipSpecialTokens)}}) << std::endl;
        return 0;
    } catch (const tokenizer::TokenizerError& error) {
        err << "kvscope-cli detokenize: " << error.what() << "\n";
        return 2;
    }
}

} // namespace kvscope::cli
