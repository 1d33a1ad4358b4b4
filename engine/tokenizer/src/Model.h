// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvscope::tokenizer {

/// One token a model produced for a pre-tokenized word: its id and byte range in that word.
struct ModelToken {
    std::uint32_t id;
    std::uint32_t begin;
    std::uint32_t end;
    /// The token's string is the input it covers, not the vocabulary entry (Unigram's unknown
    /// pieces, as Hugging Face reports them).
    bool textFromInput = false;
};

/// A tokenizer.json model (BPE, Unigram): turns one pre-tokenized word into token ids, and owns
/// the vocabulary (ids <-> token strings) that decoding reads.
class Model {
public:
    virtual ~Model() = default;
    /// Appends the tokens of `word` to `out`.
    virtual void tokenize(std::string_view word, std::vector<ModelToken>& out) const = 0;
    virtual std::optional<std::uint32_t> tokenToId(std::string_view token) const = 0;
    /// nullptr when id is outside the vocabulary.
    virtual const std::string* idToToken(std::uint32_t id) const = 0;
    virtual std::size_t vocabSize() const = 0;
    virtual std::optional<std::uint32_t> unkId() const = 0;
    virtual std::string typeName() const = 0;

    /// The model of a tokenizer.json "model" value; refuses unknown types naming the supported ones.
    static std::unique_ptr<Model> fromJson(const nlohmann::json& json);
};

} // namespace kvscope::tokenizer
