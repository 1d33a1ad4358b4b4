// SPDX-License-Identifier: GPL-3.0-or-later
#include "UnigramModel.h"

#include "ComponentJson.h"
#include "Unicode.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <limits>

namespace kvscope::tokenizer {

namespace {
constexpr std::string_view kUnigramModelComponent = "model Unigram";
// Hugging Face scores an unknown character this far below the rarest piece.
constexpr double kUnkPenalty = 10.0;
} // namespace

UnigramModel::UnigramModel(const nlohmann::json& json) {
    const auto& vocab = ComponentJson::array(json, "vocab", kUnigramModelComponent);
    m_vocab.reserve(vocab.size());
    m_scores.reserve(vocab.size());
    double minScore = std::numeric_limits<double>::infinity();
    for (const auto& entry : vocab) {
        if (!entry.is_array() || entry.size() != 2 || !entry[0].is_string() || !entry[1].is_number()) {
            throw TokenizerError("model Unigram: vocab entries must be [piece, score]");
        }
        const auto id = static_cast<std::uint32_t>(m_vocab.idCount());
        std::string piece = entry[0].get<std::string>();
        m_maxPieceLength = std::max(m_maxPieceLength, piece.size());
        m_scores.push_back(entry[1].get<double>());
        m_vocab.add(std::move(piece), id);
        minScore = std::min(minScore, m_scores.back());
    }
    if (const auto it = json.find("unk_id"); it != json.end() && !it->is_null()) {
        if (!ComponentJson::isIndex(*it) || it->get<std::size_t>() >= m_vocab.idCount()) {
            throw TokenizerError("model Unigram: unk_id must index the vocabulary");
        }
        m_unkId = it->get<std::uint32_t>();
    }
    m_unkScore = minScore - kUnkPenalty;
    m_byteFallback = ComponentJson::boolean(json, "byte_fallback", kUnigramModelComponent, false);
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        m_byteIds[static_cast<std::size_t>(b)] = m_vocab.find(std::string_view(name));
    }
}

std::optional<std::uint32_t> UnigramModel::tokenToId(std::string_view token) const {
    return m_vocab.find(token);
}

const std::string* UnigramModel::idToToken(std::uint32_t id) const {
    return m_vocab.token(id);
}

void UnigramModel::tokenize(std::string_view word, std::vector<ModelToken>& out) const {
    if (word.empty()) {
        return;
    }
    struct Best {
        double score = 0.0;
        std::int64_t start = -1; // -1: not reached yet
        std::uint32_t id = 0;
    };
    std::vector<Best> best(word.size() + 1);
    best[0].start = 0;
    std::size_t position = 0;
    while (position < word.size()) {
        const double scoreHere = best[position].score;
        const std::size_t charLength =
            std::min(word.size() - position, Unicode::sequenceLength(static_cast<unsigned char>(word[position])));
        bool hasSingleChar = false;
        const std::size_t longest = std::min(m_maxPieceLength, word.size() - position);
        for (std::size_t length = 1; length <= longest; ++length) {
            const auto id = m_vocab.find(word.substr(position, length));
            if (!id) {
                continue;
            }
            const double candidate = m_scores[*id] + scoreHere;
            Best& target = best[position + length];
            if (target.start < 0 || candidate > target.score) {
                target = {candidate, static_cast<std::int64_t>(position), *id};
            }
            hasSingleChar = hasSingleChar || length == charLength;
        }
        if (!hasSingleChar) {
            if (!m_unkId) {
                throw TokenizerError("model Unigram: the text needs an unknown token and the model has no unk_id");
            }
            const double candidate = m_unkScore + scoreHere;
            Best& target = best[position + charLength];
            if (target.start < 0 || candidate > target.score) {
                target = {candidate, static_cast<std::int64_t>(position), *m_unkId};
            }
        }
        position += charLength;
    }
    // Walk back the best path; consecutive unknown pieces fuse into one.
    struct Piece {
        std::size_t begin;
        std::size_t end;
        bool unknown;
    };
    std::vector<Piece> pieces;
    std::size_t end = word.size();
    while (end > 0) {
        const Best& node = best[end];
        const auto start = static_cast<std::size_t>(node.start);
        const bool unknown = m_unkId && node.id == *m_unkId;
        if (unknown && !pieces.empty() && pieces.back().unknown) {
            pieces.back().begin = start;
        } else {
            pieces.push_back({start, end, unknown});
        }
        end = start;
    }
    std::reverse(pieces.begin(), pieces.end());
    for (const Piece& piece : pieces) {
        const std::string_view text = word.substr(piece.begin, piece.end - piece.begin);
        if (const auto id = m_vocab.find(text)) {
            out.push_back({*id, static_cast<std::uint32_t>(piece.begin), static_cast<std::uint32_t>(piece.end)});
            continue;
        }
        bool all = m_byteFallback;
        for (const char c : text) {
            all = all && m_byteIds[static_cast<unsigned char>(c)].has_value();
        }
        if (all) {
            for (std::size_t k = 0; k < text.size(); ++k) {
                const auto at = static_cast<std::uint32_t>(piece.begin + k);
                out.push_back({*m_byteIds[static_cast<unsigned char>(text[k])], at, at + 1});
            }
        } else {
            out.push_back({*m_unkId, static_cast<std::uint32_t>(piece.begin), static_cast<std::uint32_t>(piece.end), true});
        }
    }
}

} // namespace kvscope::tokenizer
