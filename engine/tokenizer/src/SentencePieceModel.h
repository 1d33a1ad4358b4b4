// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/tokenizer/Encoding.h"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace kvscope::tokenizer {

/// A checkpoint that ships only a SentencePiece tokenizer.model, run by Debian's libsentencepiece
/// itself (so its normalizer and model behave exactly as the original), with offsets from its proto.
/// libsentencepiece is reached through a module loaded on first use (see SentencePieceModule.cpp:
/// its bundled protobuf must not meet LibTorch's).
class SentencePieceModel {
public:
    explicit SentencePieceModel(const std::filesystem::path& modelFile);
    ~SentencePieceModel();
    SentencePieceModel(const SentencePieceModel&) = delete;
    SentencePieceModel& operator=(const SentencePieceModel&) = delete;

    /// Ids, pieces and byte offsets of text (no bos/eos: the caller adds them as configured).
    Encoding encode(std::string_view text) const;
    std::string decode(std::span<const std::int32_t> ids) const;
    std::optional<std::int32_t> pieceToId(std::string_view piece) const;
    std::optional<std::string> idToPiece(std::int32_t id) const;
    std::size_t vocabSize() const;
    std::optional<std::int32_t> bosId() const;
    std::optional<std::int32_t> eosId() const;
    bool isControl(std::int32_t id) const;

private:
    struct Module;
    const Module& m_module;
    void* m_handle = nullptr;
};

} // namespace kvscope::tokenizer
