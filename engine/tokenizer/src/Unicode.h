// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kvscope::tokenizer {

/// UTF-8 walking and the character classes Hugging Face's Rust code asks of `char`
/// (is_whitespace, is_numeric, is_alphanumeric), answered by ICU's property tables.
class Unicode {
public:
    /// Bytes in the UTF-8 sequence that starts with lead (1 for a stray continuation byte).
    static std::size_t sequenceLength(unsigned char lead) {
        if (lead < 0x80) {
            return 1;
        }
        if ((lead >> 5) == 0x6) {
            return 2;
        }
        if ((lead >> 4) == 0xE) {
            return 3;
        }
        if ((lead >> 3) == 0x1E) {
            return 4;
        }
        return 1;
    }
    /// Decodes the code point at i and advances i past it; the text must be valid UTF-8.
    static char32_t next(std::string_view text, std::size_t& i);
    /// The code point that ends at byte end (exclusive); the text must be valid UTF-8.
    static char32_t previous(std::string_view text, std::size_t end);
    static void append(std::string& out, char32_t codePoint);
    static bool isValidUtf8(std::string_view text);
    /// Decodes bytes as the WHATWG decoder (and Rust's from_utf8_lossy) do: each maximal invalid
    /// subpart becomes one U+FFFD.
    static std::string lossyDecode(std::string_view bytes);

    static bool isWhitespace(char32_t c);
    static bool isNumeric(char32_t c);
    static bool isAlphanumeric(char32_t c);
};

} // namespace kvscope::tokenizer
