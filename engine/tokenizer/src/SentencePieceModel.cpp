// SPDX-License-Identifier: GPL-3.0-or-later
#include "SentencePieceModel.h"

#include "kvscope/tokenizer/TokenizerError.h"

#include <sentencepiece_processor.h>

#include <vector>

namespace kvscope::tokenizer {

SentencePieceModel::SentencePieceModel(const std::filesystem::path& modelFile)
    : m_processor(std::make_unique<sentencepiece::SentencePieceProcessor>()) {
    const auto status = m_processor->Load(modelFile.string());
    if (!status.ok()) {
        throw TokenizerError("SentencePiece model " + modelFile.string() + ": " + status.ToString());
    }
}

SentencePieceModel::~SentencePieceModel() = default;

Encoding SentencePieceModel::encode(std::string_view text) const {
    const auto proto = m_processor->EncodeAsImmutableProto(std::string(text));
    Encoding encoding;
    for (const auto& piece : proto.pieces()) {
        encoding.ids.push_back(static_cast<std::int32_t>(piece.id()));
        encoding.tokens.push_back(piece.piece());
        encoding.offsets.emplace_back(piece.begin(), piece.end());
    }
    return encoding;
}

std::string SentencePieceModel::decode(std::span<const std::int32_t> ids) const {
    std::vector<int> values(ids.begin(), ids.end());
    for (const int id : values) {
        if (id < 0 || id >= m_processor->GetPieceSize()) {
            throw TokenizerError("SentencePiece: id " + std::to_string(id) + " is outside the vocabulary of " +
                                 std::to_string(m_processor->GetPieceSize()));
        }
    }
    return m_processor->DecodeIds(values);
}

std::optional<std::int32_t> SentencePieceModel::pieceToId(std::string_view piece) const {
    const int id = m_processor->PieceToId(piece);
    if (id == m_processor->unk_id() && piece != m_processor->IdToPiece(id)) {
        return std::nullopt;
    }
    return id;
}

std::optional<std::string> SentencePieceModel::idToPiece(std::int32_t id) const {
    if (id < 0 || id >= m_processor->GetPieceSize()) {
        return std::nullopt;
    }
    return m_processor->IdToPiece(id);
}

std::size_t SentencePieceModel::vocabSize() const { return static_cast<std::size_t>(m_processor->GetPieceSize()); }

std::optional<std::int32_t> SentencePieceModel::bosId() const {
    const int id = m_processor->bos_id();
    return id >= 0 ? std::optional<std::int32_t>(id) : std::nullopt;
}

std::optional<std::int32_t> SentencePieceModel::eosId() const {
    const int id = m_processor->eos_id();
    return id >= 0 ? std::optional<std::int32_t>(id) : std::nullopt;
}

bool SentencePieceModel::isControl(std::int32_t id) const { return m_processor->IsControl(id); }

} // namespace kvscope::tokenizer
