// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "NormalizedString.h"

#include <nlohmann/json_fwd.hpp>

#include <memory>
#include <vector>

namespace kvscope::tokenizer {

/// A tokenizer.json pre-tokenizer (ByteLevel, Split, Metaspace, Digits, Sequence): cuts normalized
/// text into the words the model encodes one by one, and may rewrite them (byte-level alphabet,
/// metaspace). Pieces keep their alignment to the original text; empty pieces are dropped.
class PreTokenizer {
public:
    virtual ~PreTokenizer() = default;
    /// Replaces `pieces` by their pre-tokenized pieces, in order.
    virtual void preTokenize(std::vector<NormalizedString>& pieces) const = 0;

    /// The pre-tokenizer of a tokenizer.json "pre_tokenizer" value; null gives nullptr. Refuses
    /// unknown types and behaviours with TokenizerError naming them and the supported ones.
    static std::unique_ptr<PreTokenizer> fromJson(const nlohmann::json& json);
};

} // namespace kvscope::tokenizer
