// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace CLI {
class App;
}

namespace kvscope::tokenizer {
class Tokenizer;
}

namespace kvscope::cli {

/// `kvscope-cli tokenize` and `detokenize`: a checkpoint's Hugging Face tokenizer (a folder, a
/// tokenizer.json or a tokenizer.model) on the command line, printing one JSON document.
class TokenizeCommand {
public:
    struct Options {
        std::string tokenizer;
        std::string text;
        std::string file;
        std::vector<std::int32_t> ids;
        bool noSpecialTokens = false;
        bool skipSpecialTokens = false;
    };

    /// Adds `tokenize` and `detokenize` to app; returns {tokenize, detokenize}.
    static std::pair<CLI::App*, CLI::App*> addSubcommands(CLI::App& app, Options& options);
    /// {"ids": [...], "tokens": [...], "offsets": [[begin, end], ...]}; offsets are byte ranges of text.
    static nlohmann::json tokenize(const tokenizer::Tokenizer& tokenizer, std::string_view text, bool addSpecialTokens);
    /// Loads the tokenizer, encodes TEXT or --file, prints tokenize() on out; returns the exit code
    /// (2 with a message on err for bad input).
    static int executeTokenize(const Options& options, std::ostream& out, std::ostream& err);
    /// Prints {"text": ...} of the ids on out; returns the exit code.
    static int executeDetokenize(const Options& options, std::ostream& out, std::ostream& err);
};

} // namespace kvscope::cli
