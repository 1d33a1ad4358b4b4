// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "NormalizedString.h"

#include <nlohmann/json_fwd.hpp>

#include <memory>
#include <string>
#include <string_view>

namespace kvscope::tokenizer {

/// A tokenizer.json normalizer (NFC, NFKC, NFD, NFKD, Lowercase, Strip, Replace, Prepend, Sequence):
/// rewrites text before pre-tokenization while keeping each byte's origin for offsets.
class Normalizer {
public:
    virtual ~Normalizer() = default;
    virtual NormalizedString normalize(const NormalizedString& text) const = 0;

    /// Plain-string convenience (added tokens flagged `normalized` are matched in this form).
    std::string normalizeText(std::string_view text) const { return normalize(NormalizedString(text, 0)).text(); }

    /// The normalizer of a tokenizer.json "normalizer" value; null gives nullptr. Refuses unknown
    /// types with TokenizerError naming them and the supported ones.
    static std::unique_ptr<Normalizer> fromJson(const nlohmann::json& json);
};

} // namespace kvscope::tokenizer
