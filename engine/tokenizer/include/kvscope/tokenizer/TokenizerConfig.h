// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvscope::tokenizer {

/// What a checkpoint's tokenizer_config.json says around the tokenizer itself: its special tokens,
/// whether bos/eos are added, and whether decoding cleans up spaces before punctuation.
/// Fields left out of the file keep the defaults that Hugging Face's loaders use.
class TokenizerConfig {
public:
    /// Parses tokenizer_config.json text; throws TokenizerError on bad JSON.
    static TokenizerConfig fromJson(std::string_view json);

    std::optional<std::string> bosToken;
    std::optional<std::string> eosToken;
    std::optional<std::string> unkToken;
    std::optional<std::string> padToken;
    /// Set only where the file says so: an absent flag leaves the post-processor's template alone.
    std::optional<bool> addBosToken;
    std::optional<bool> addEosToken;
    /// transformers (and the JS reference) default to true when the key is absent.
    bool cleanUpTokenizationSpaces = true;
    std::string tokenizerClass;
    std::vector<std::string> additionalSpecialTokens;
};

} // namespace kvscope::tokenizer
