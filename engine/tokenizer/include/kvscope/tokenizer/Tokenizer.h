// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/tokenizer/Encoding.h"
#include "kvscope/tokenizer/TokenizerConfig.h"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace kvscope::tokenizer {

/// Turns text into token ids and back exactly as a checkpoint's Hugging Face tokenizer does.
/// Loaded from tokenizer.json (+ tokenizer_config.json) or a SentencePiece tokenizer.model; any
/// component outside the supported set is refused at load time. Encoding and decoding are const
/// and safe to call from several threads (the BPE word cache is internally locked).
class Tokenizer {
public:
    /// A checkpoint folder (tokenizer.json, else tokenizer.model; tokenizer_config.json when present)
    /// or a tokenizer.json / tokenizer.model file (its sibling tokenizer_config.json is read too).
    static Tokenizer fromPath(const std::filesystem::path& path);
    /// tokenizer.json text plus tokenizer_config.json text (empty: no config).
    static Tokenizer fromJson(std::string_view tokenizerJson, std::string_view configJson = {});

    Tokenizer(Tokenizer&&) noexcept;
    Tokenizer& operator=(Tokenizer&&) noexcept;
    ~Tokenizer();

    /// Encodes UTF-8 text; addSpecialTokens applies the post-processor (bos/eos as configured).
    /// Invalid UTF-8 is refused with TokenizerError, since Hugging Face only takes valid strings.
    Encoding encode(std::string_view text, bool addSpecialTokens = true) const;
    /// Decodes ids to text; ids outside the vocabulary decode as the unknown token (or are refused
    /// with TokenizerError when there is none).
    std::string decode(std::span<const std::int32_t> ids, bool skipSpecialTokens = false) const;

    std::optional<std::int32_t> tokenToId(std::string_view token) const;
    std::optional<std::string> idToToken(std::int32_t id) const;
    /// Model vocabulary plus added tokens (the largest id + 1).
    std::size_t vocabSize() const;
    std::optional<std::int32_t> bosId() const;
    std::optional<std::int32_t> eosId() const;
    const TokenizerConfig& config() const;
    /// "BPE", "Unigram" or "SentencePiece", for display.
    std::string modelType() const;

private:
    struct Impl;
    explicit Tokenizer(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> m_impl;
};

} // namespace kvscope::tokenizer
