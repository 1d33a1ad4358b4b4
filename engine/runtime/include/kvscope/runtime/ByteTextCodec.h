// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/runtime/TextCodec.h"

namespace kvscope::runtime {

/// The built-in models' text: one token per byte after a bos token (model::ByteTokenizer).
class ByteTextCodec : public TextCodec {
public:
    std::string name() const override { return "bytes"; }
    std::vector<std::int64_t> encode(std::string_view text) const override;
    /// Refused: the byte tokenizer's models have no chat template.
    std::vector<std::int64_t> encodeChat(std::string_view message) const override;
    std::string decode(const std::vector<std::int64_t>& ids) const override;
    std::string piece(std::int64_t id) const override;
    std::optional<std::int64_t> eosId() const override;
    std::int64_t padId() const override;
};

} // namespace kvscope::runtime
