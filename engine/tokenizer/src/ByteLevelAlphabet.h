// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "NormalizedString.h"

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace kvscope::tokenizer {

/// GPT-2's byte-to-character table: every byte becomes a printable character so that byte-level
/// vocabularies are written in text ("Ġ" is the space byte). Encoding keeps each character aligned
/// with the whole original character its byte belonged to, as Hugging Face's offsets do.
class ByteLevelAlphabet {
public:
    /// UTF-8 of the character standing for byte b.
    static const std::string& charFor(unsigned char b);
    /// The byte a character stands for, if it is one of the 256.
    static std::optional<unsigned char> byteFor(char32_t c);
    static NormalizedString encode(const NormalizedString& text);
    /// Byte-level token text -> raw bytes; a token with a character outside the table is taken as its
    /// own UTF-8 bytes (Hugging Face's decoder does the same).
    static void appendBytes(std::string_view token, std::string& bytes);
};

} // namespace kvscope::tokenizer
