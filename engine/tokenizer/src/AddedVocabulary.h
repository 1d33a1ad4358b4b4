// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "StringHash.h"

#include <nlohmann/json_fwd.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kvscope::tokenizer {

class Normalizer;

/// One entry of tokenizer.json's "added_tokens".
struct AddedToken {
    std::string content;
    std::uint32_t id = 0;
    bool singleWord = false;
    bool lstrip = false;
    bool rstrip = false;
    bool normalized = true;
    bool special = false;
};

/// The added and special tokens of a tokenizer.json, found in text before the model sees it:
/// tokens flagged `normalized: false` are matched in the raw input, the others in normalized text.
/// Matching is leftmost-longest, honouring single_word, lstrip and rstrip as Hugging Face does.
class AddedVocabulary {
public:
    /// A stretch of text: an added token (id set) or text for the model, as byte range [begin, end).
    struct Split {
        std::size_t begin;
        std::size_t end;
        std::optional<std::uint32_t> id;
    };

    AddedVocabulary() = default;
    /// Reads "added_tokens"; `normalizer` (may be null) gives the normalized form of normalized tokens.
    AddedVocabulary(const nlohmann::json& addedTokens, const Normalizer* normalizer);

    /// Splits raw text (normalizedForm false) or normalized text (true) around added tokens.
    void split(std::string_view text, bool normalizedForm, std::vector<Split>& out) const;

    const std::vector<AddedToken>& tokens() const { return m_tokens; }
    const AddedToken* byId(std::uint32_t id) const;
    std::optional<std::uint32_t> idOf(std::string_view content) const;

private:
    // A byte trie over the contents to match (one per form); node 0 is the root.
    struct Trie {
        std::unordered_map<std::uint64_t, std::uint32_t> edges; // (node << 8 | byte) -> child
        std::vector<std::int32_t> terminal{-1};                 // node -> token index, or -1
        std::array<bool, 256> firstByte{};
        bool empty = true;
        void insert(std::string_view key, std::int32_t tokenIndex);
    };
    void splitWith(const Trie& trie, std::string_view text, std::vector<Split>& out) const;

    std::vector<AddedToken> m_tokens;
    std::unordered_map<std::uint32_t, std::size_t> m_byId;
    std::unordered_map<std::string, std::uint32_t, StringHash, std::equal_to<>> m_byContent;
    Trie m_raw;
    Trie m_normalized;
};

} // namespace kvscope::tokenizer
