// SPDX-License-Identifier: GPL-3.0-or-later
#include "BpeModel.h"

#include "ComponentJson.h"
#include "Unicode.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <queue>

namespace kvscope::tokenizer {

namespace {

constexpr std::string_view kBpeModelComponent = "model BPE";
// Words this long are rare and would crowd the cache (Hugging Face caches below the same length).
constexpr std::size_t kMaxCachedWordLength = 256;
constexpr std::size_t kCacheCapacity = 200000;
constexpr std::uint64_t kMaxVocabularyId = 1u << 24;

struct Symbol {
    std::uint32_t id;
    std::int32_t prev;
    std::int32_t next;
    std::uint32_t begin;
    std::uint32_t length; // 0 once merged into its left neighbour
};

struct Merge {
    std::uint32_t rank;
    std::uint32_t position;
    std::uint32_t newId;
    // std::priority_queue is a max-heap: invert so the lowest rank, then leftmost, comes first.
    bool operator<(const Merge& other) const {
        return rank != other.rank ? rank > other.rank : position > other.position;
    }
};

} // namespace

BpeModel::BpeModel(const nlohmann::json& json) {
    if (json.contains("dropout") && !json["dropout"].is_null() && json["dropout"].is_number() &&
        json["dropout"].get<double>() > 0.0) {
        // Dropout makes encoding random; a trace of a session must be reproducible.
        ComponentJson::refuse(kBpeModelComponent, "dropout", json["dropout"].dump(), "null or 0");
    }
    const auto vocab = json.find("vocab");
    if (vocab == json.end() || !vocab->is_object()) {
        throw TokenizerError("model BPE: \"vocab\" must be an object of token -> id");
    }
    m_vocab.reserve(vocab->size());
    for (const auto& [token, id] : vocab->items()) {
        if (!ComponentJson::isIndex(id)) {
            throw TokenizerError("model BPE: vocab id of '" + token + "' must be a non-negative integer");
        }
        // Ids index a table; the largest real vocabularies have a few hundred thousand entries.
        if (id.get<std::uint64_t>() >= kMaxVocabularyId) {
            throw TokenizerError("model BPE: vocab id " + id.dump() + " of '" + token + "' is above the supported " +
                                 std::to_string(kMaxVocabularyId - 1));
        }
        const auto value = id.get<std::uint32_t>();
        m_vocab.add(token, value);
    }
    m_continuingSubwordPrefix = ComponentJson::string(json, "continuing_subword_prefix", kBpeModelComponent);
    m_endOfWordSuffix = ComponentJson::string(json, "end_of_word_suffix", kBpeModelComponent);
    m_byteFallback = ComponentJson::boolean(json, "byte_fallback", kBpeModelComponent, false);
    m_fuseUnk = ComponentJson::boolean(json, "fuse_unk", kBpeModelComponent, false);
    m_ignoreMerges = ComponentJson::boolean(json, "ignore_merges", kBpeModelComponent, false);
    const std::string unk = ComponentJson::string(json, "unk_token", kBpeModelComponent);
    if (!unk.empty()) {
        m_unkId = m_vocab.find(unk);
        if (!m_unkId) {
            throw TokenizerError("model BPE: unk_token '" + unk + "' is not in the vocabulary");
        }
    }
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        m_byteIds[static_cast<std::size_t>(b)] = m_vocab.find(std::string_view(name));
    }

    const auto& merges = ComponentJson::array(json, "merges", kBpeModelComponent);
    m_merges.reserve(merges.size());
    std::uint32_t rank = 0;
    for (const auto& merge : merges) {
        std::string left;
        std::string right;
        if (merge.is_string()) {
            const std::string& line = merge.get_ref<const std::string&>();
            const std::size_t space = line.find(' ');
            if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos) {
                throw TokenizerError("model BPE: merge " + std::to_string(rank) + " '" + line +
                                     "' is not two tokens separated by one space");
            }
            left = line.substr(0, space);
            right = line.substr(space + 1);
        } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
            left = merge[0].get<std::string>();
            right = merge[1].get<std::string>();
        } else {
            throw TokenizerError("model BPE: merge " + std::to_string(rank) + " must be \"a b\" or [\"a\", \"b\"]");
        }
        const auto leftId = m_vocab.find(left);
        const auto rightId = m_vocab.find(right);
        if (!leftId || !rightId) {
            throw TokenizerError("model BPE: merge " + std::to_string(rank) + " uses a token missing from the vocabulary ('" +
                                 (!leftId ? left : right) + "')");
        }
        std::string_view rightPart = right;
        if (!m_continuingSubwordPrefix.empty() && rightPart.starts_with(m_continuingSubwordPrefix)) {
            rightPart.remove_prefix(m_continuingSubwordPrefix.size());
        }
        const std::string merged = left + std::string(rightPart);
        const auto mergedId = m_vocab.find(merged);
        if (!mergedId) {
            throw TokenizerError("model BPE: merge " + std::to_string(rank) + " makes '" + merged +
                                 "', which is not in the vocabulary");
        }
        // The first occurrence of a pair wins, as in Hugging Face's hash map built in order.
        m_merges.add(*leftId, *rightId, {rank, *mergedId});
        ++rank;
    }
}

std::optional<std::uint32_t> BpeModel::tokenToId(std::string_view token) const {
    return m_vocab.find(token);
}

const std::string* BpeModel::idToToken(std::uint32_t id) const {
    return m_vocab.token(id);
}

void BpeModel::tokenize(std::string_view word, std::vector<ModelToken>& out) const {
    if (word.empty()) {
        return;
    }
    if (m_ignoreMerges) {
        if (const auto id = m_vocab.find(word)) {
            out.push_back({*id, 0, static_cast<std::uint32_t>(word.size())});
            return;
        }
    }
    const bool cacheable = word.size() < kMaxCachedWordLength;
    if (cacheable) {
        std::lock_guard lock(m_cacheMutex);
        if (const auto it = m_cache.find(word); it != m_cache.end()) {
            out.insert(out.end(), it->second.begin(), it->second.end());
            return;
        }
    }
    const std::size_t mark = out.size();
    tokenizeUncached(word, out);
    if (cacheable) {
        std::lock_guard lock(m_cacheMutex);
        if (m_cache.size() >= kCacheCapacity) {
            m_cache.clear();
        }
        m_cache.emplace(std::string(word), std::vector<ModelToken>(out.begin() + static_cast<std::ptrdiff_t>(mark), out.end()));
    }
}

void BpeModel::tokenizeUncached(std::string_view word, std::vector<ModelToken>& out) const {
    thread_local std::vector<Symbol> symbols;
    thread_local std::string scratch;
    symbols.clear();
    auto add = [&](std::uint32_t id, std::uint32_t begin, std::uint32_t length) {
        const auto index = static_cast<std::int32_t>(symbols.size());
        symbols.push_back({id, index - 1, -1, begin, length});
        if (index > 0) {
            symbols[static_cast<std::size_t>(index - 1)].next = index;
        }
    };
    // A pending unknown symbol: (begin, length), flushed before the next known one (or fused).
    bool unkPending = false;
    std::uint32_t unkBegin = 0;
    std::uint32_t unkLength = 0;
    std::size_t i = 0;
    while (i < word.size()) {
        const std::size_t begin = i;
        i = std::min(word.size(), i + Unicode::sequenceLength(static_cast<unsigned char>(word[i])));
        const auto byteLength = static_cast<std::uint32_t>(i - begin);
        std::string_view piece = word.substr(begin, i - begin);
        if (begin > 0 && !m_continuingSubwordPrefix.empty()) {
            scratch.assign(m_continuingSubwordPrefix).append(piece);
            piece = scratch;
        }
        if (i == word.size() && !m_endOfWordSuffix.empty()) {
            if (piece.data() != scratch.data()) {
                scratch.assign(piece);
            }
            scratch.append(m_endOfWordSuffix);
            piece = scratch;
        }
        if (const auto id = m_vocab.find(piece)) {
            if (unkPending) {
                add(*m_unkId, unkBegin, unkLength);
                unkPending = false;
            }
            add(*id, static_cast<std::uint32_t>(begin), byteLength);
            continue;
        }
        if (m_byteFallback) {
            bool all = true;
            for (const char c : piece) {
                all = all && m_byteIds[static_cast<unsigned char>(c)].has_value();
            }
            if (all) {
                // Symbols must stay in text order for merges and offsets, so a pending unk goes first
                // (Hugging Face appends it after the bytes, which scrambles its offsets).
                if (unkPending) {
                    add(*m_unkId, unkBegin, unkLength);
                    unkPending = false;
                }
                // Hugging Face gives each byte token a length of one byte from the character start.
                std::uint32_t position = static_cast<std::uint32_t>(begin);
                for (const char c : piece) {
                    add(*m_byteIds[static_cast<unsigned char>(c)], position, 1);
                    position = std::min<std::uint32_t>(position + 1, static_cast<std::uint32_t>(i));
                }
                continue;
            }
        }
        if (m_unkId) {
            if (unkPending && m_fuseUnk) {
                unkLength += byteLength;
            } else {
                if (unkPending) {
                    add(*m_unkId, unkBegin, unkLength);
                }
                unkPending = true;
                unkBegin = static_cast<std::uint32_t>(begin);
                unkLength = byteLength;
            }
        }
    }
    if (unkPending) {
        add(*m_unkId, unkBegin, unkLength);
    }

    if (symbols.size() > 1) {
        thread_local std::vector<Merge> heap;
        heap.clear();
        std::priority_queue<Merge> queue(std::less<Merge>(), std::move(heap));
        for (std::size_t k = 0; k + 1 < symbols.size(); ++k) {
            if (const auto* merge = m_merges.find(symbols[k].id, symbols[k + 1].id)) {
                queue.push({merge->rank, static_cast<std::uint32_t>(k), merge->mergedId});
            }
        }
        while (!queue.empty()) {
            const Merge top = queue.top();
            queue.pop();
            Symbol& current = symbols[top.position];
            if (current.length == 0 || current.next < 0) {
                continue;
            }
            const auto nextPosition = static_cast<std::size_t>(current.next);
            const Symbol right = symbols[nextPosition];
            const auto* merge = m_merges.find(current.id, right.id);
            if (merge == nullptr || merge->mergedId != top.newId) {
                continue; // stale: one side merged since this entry was queued
            }
            current.id = top.newId;
            current.length += right.length;
            current.next = right.next;
            symbols[nextPosition].length = 0;
            if (right.next >= 0) {
                symbols[static_cast<std::size_t>(right.next)].prev = static_cast<std::int32_t>(top.position);
            }
            if (current.prev >= 0) {
                const Symbol& previous = symbols[static_cast<std::size_t>(current.prev)];
                if (const auto* p = m_merges.find(previous.id, current.id)) {
                    queue.push({p->rank, static_cast<std::uint32_t>(current.prev), p->mergedId});
                }
            }
            if (current.next >= 0) {
                const Symbol& following = symbols[static_cast<std::size_t>(current.next)];
                if (const auto* n = m_merges.find(current.id, following.id)) {
                    queue.push({n->rank, top.position, n->mergedId});
                }
            }
        }
    }
    for (const Symbol& symbol : symbols) {
        if (symbol.length > 0) {
            out.push_back({symbol.id, symbol.begin, symbol.begin + symbol.length});
        }
    }
}

} // namespace kvscope::tokenizer
