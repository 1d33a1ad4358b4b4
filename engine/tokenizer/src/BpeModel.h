// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "MergeTable.h"
#include "Model.h"
#include "StringHash.h"
#include "Vocabulary.h"

#include <array>
#include <mutex>
#include <unordered_map>

namespace kvscope::tokenizer {

/// Byte-pair encoding as Hugging Face's BPE model does it: characters (or byte-fallback tokens, or
/// unk) become symbols, then the lowest-ranked merge applies first, leftmost on ties. Supports
/// byte_fallback, fuse_unk, ignore_merges, continuing_subword_prefix and end_of_word_suffix.
/// Results are cached per word, since prose repeats its words.
class BpeModel : public Model {
public:
    explicit BpeModel(const nlohmann::json& json);

    void tokenize(std::string_view word, std::vector<ModelToken>& out) const override;
    std::optional<std::uint32_t> tokenToId(std::string_view token) const override;
    const std::string* idToToken(std::uint32_t id) const override;
    std::size_t vocabSize() const override { return m_vocab.idCount(); }
    std::optional<std::uint32_t> unkId() const override { return m_unkId; }
    std::string typeName() const override { return "BPE"; }

private:
    void tokenizeUncached(std::string_view word, std::vector<ModelToken>& out) const;

    Vocabulary m_vocab; // its ids may have holes
    MergeTable m_merges;
    std::optional<std::uint32_t> m_unkId;
    std::string m_continuingSubwordPrefix;
    std::string m_endOfWordSuffix;
    bool m_byteFallback = false;
    bool m_fuseUnk = false;
    bool m_ignoreMerges = false;
    std::array<std::optional<std::uint32_t>, 256> m_byteIds{};

    mutable std::mutex m_cacheMutex;
    mutable std::unordered_map<std::string, std::vector<ModelToken>, StringHash, std::equal_to<>> m_cache;
};

} // namespace kvscope::tokenizer
