// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "Model.h"
#include "Vocabulary.h"

#include <array>

namespace kvscope::tokenizer {

/// SentencePiece's unigram language model as Hugging Face runs it: the Viterbi path of highest total
/// log-probability over all vocabulary pieces that tile the word; characters no piece covers become
/// unk (consecutive unks fused) or, with byte_fallback, <0xXX> byte tokens.
class UnigramModel : public Model {
public:
    explicit UnigramModel(const nlohmann::json& json);

    void tokenize(std::string_view word, std::vector<ModelToken>& out) const override;
    std::optional<std::uint32_t> tokenToId(std::string_view token) const override;
    const std::string* idToToken(std::uint32_t id) const override;
    std::size_t vocabSize() const override { return m_vocab.idCount(); }
    std::optional<std::uint32_t> unkId() const override { return m_unkId; }
    std::string typeName() const override { return "Unigram"; }

private:
    Vocabulary m_vocab; // ids are positions in the file's list
    std::vector<double> m_scores;
    std::size_t m_maxPieceLength = 0;
    std::optional<std::uint32_t> m_unkId;
    double m_unkScore = 0.0;
    bool m_byteFallback = false;
    std::array<std::optional<std::uint32_t>, 256> m_byteIds{};
};

} // namespace kvscope::tokenizer
