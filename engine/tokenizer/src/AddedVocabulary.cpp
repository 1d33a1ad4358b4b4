// SPDX-License-Identifier: GPL-3.0-or-later
#include "AddedVocabulary.h"

#include "ComponentJson.h"
#include "Normalizer.h"
#include "Unicode.h"

#include <nlohmann/json.hpp>

namespace kvscope::tokenizer {

void AddedVocabulary::Trie::insert(std::string_view key, std::int32_t tokenIndex) {
    if (key.empty()) {
        return;
    }
    empty = false;
    firstByte[static_cast<unsigned char>(key[0])] = true;
    std::uint32_t node = 0;
    for (const char c : key) {
        const std::uint64_t edge = (static_cast<std::uint64_t>(node) << 8) | static_cast<unsigned char>(c);
        const auto it = edges.find(edge);
        if (it != edges.end()) {
            node = it->second;
        } else {
            const auto child = static_cast<std::uint32_t>(terminal.size());
            terminal.push_back(-1);
            edges.emplace(edge, child);
            node = child;
        }
    }
    // A later duplicate content keeps the first token, as Hugging Face's map does.
    if (terminal[node] < 0) {
        terminal[node] = tokenIndex;
    }
}

AddedVocabulary::AddedVocabulary(const nlohmann::json& addedTokens, const Normalizer* normalizer) {
    if (addedTokens.is_null()) {
        return;
    }
    if (!addedTokens.is_array()) {
        throw TokenizerError("added_tokens: expected an array");
    }
    for (const auto& entry : addedTokens) {
        if (!entry.is_object() || !entry.contains("id") || !ComponentJson::isIndex(entry["id"]) ||
            !entry.contains("content") || !entry["content"].is_string()) {
            throw TokenizerError("added_tokens: every entry needs an \"id\" (non-negative integer) and a \"content\" string");
        }
        AddedToken token;
        token.content = entry["content"].get<std::string>();
        if (entry["id"].get<std::uint64_t>() >= (1u << 24)) {
            throw TokenizerError("added_tokens: id " + entry["id"].dump() + " is above the supported 16777215");
        }
        token.id = entry["id"].get<std::uint32_t>();
        token.singleWord = ComponentJson::boolean(entry, "single_word", "added_tokens", false);
        token.lstrip = ComponentJson::boolean(entry, "lstrip", "added_tokens", false);
        token.rstrip = ComponentJson::boolean(entry, "rstrip", "added_tokens", false);
        token.special = ComponentJson::boolean(entry, "special", "added_tokens", false);
        token.normalized = ComponentJson::boolean(entry, "normalized", "added_tokens", !token.special);
        if (token.content.empty()) {
            throw TokenizerError("added_tokens: token " + std::to_string(token.id) + " has empty content");
        }
        const auto index = static_cast<std::int32_t>(m_tokens.size());
        m_byId.try_emplace(token.id, m_tokens.size());
        m_byContent.try_emplace(token.content, token.id);
        if (token.normalized && normalizer != nullptr) {
            m_normalized.insert(normalizer->normalizeText(token.content), index);
        } else if (token.normalized) {
            m_normalized.insert(token.content, index);
        } else {
            m_raw.insert(token.content, index);
        }
        m_tokens.push_back(std::move(token));
    }
}

const AddedToken* AddedVocabulary::byId(std::uint32_t id) const {
    const auto it = m_byId.find(id);
    return it == m_byId.end() ? nullptr : &m_tokens[it->second];
}

std::optional<std::uint32_t> AddedVocabulary::idOf(std::string_view content) const {
    const auto it = m_byContent.find(content);
    return it == m_byContent.end() ? std::nullopt : std::optional<std::uint32_t>(it->second);
}

void AddedVocabulary::split(std::string_view text, bool normalizedForm, std::vector<Split>& out) const {
    out.clear();
    const Trie& trie = normalizedForm ? m_normalized : m_raw;
    if (trie.empty) {
        if (!text.empty()) {
            out.push_back({0, text.size(), std::nullopt});
        }
        return;
    }
    splitWith(trie, text, out);
}

void AddedVocabulary::splitWith(const Trie& trie, std::string_view text, std::vector<Split>& out) const {
    std::size_t textStart = 0; // start of the text not yet emitted
    std::size_t position = 0;
    while (position < text.size()) {
        if (!trie.firstByte[static_cast<unsigned char>(text[position])]) {
            ++position;
            continue;
        }
        // Longest token starting here.
        std::uint32_t node = 0;
        std::int32_t matched = -1;
        std::size_t matchEnd = 0;
        for (std::size_t k = position; k < text.size(); ++k) {
            const std::uint64_t edge = (static_cast<std::uint64_t>(node) << 8) | static_cast<unsigned char>(text[k]);
            const auto it = trie.edges.find(edge);
            if (it == trie.edges.end()) {
                break;
            }
            node = it->second;
            if (trie.terminal[node] >= 0) {
                matched = trie.terminal[node];
                matchEnd = k + 1;
            }
        }
        if (matched < 0) {
            ++position;
            continue;
        }
        const AddedToken& token = m_tokens[static_cast<std::size_t>(matched)];
        if (token.singleWord) {
            const bool wordBefore = position > 0 && Unicode::isAlphanumeric(Unicode::previous(text, position));
            std::size_t after = matchEnd;
            const bool wordAfter = matchEnd < text.size() && Unicode::isAlphanumeric(Unicode::next(text, after));
            if (wordBefore || wordAfter) {
                position = matchEnd; // Hugging Face skips the whole match, it does not retry shorter ones
                continue;
            }
        }
        std::size_t begin = position;
        std::size_t end = matchEnd;
        if (token.lstrip) {
            while (begin > textStart && Unicode::isWhitespace(Unicode::previous(text, begin))) {
                std::size_t back = begin - 1;
                while (back > textStart && (static_cast<unsigned char>(text[back]) & 0xC0) == 0x80) {
                    --back;
                }
                begin = back;
            }
        }
        if (token.rstrip) {
            while (end < text.size()) {
                std::size_t probe = end;
                if (!Unicode::isWhitespace(Unicode::next(text, probe))) {
                    break;
                }
                end = probe;
            }
        }
        if (begin > textStart) {
            out.push_back({textStart, begin, std::nullopt});
        }
        out.push_back({begin, end, token.id});
        textStart = end;
        position = end;
    }
    if (textStart < text.size()) {
        out.push_back({textStart, text.size(), std::nullopt});
    }
}

} // namespace kvscope::tokenizer
