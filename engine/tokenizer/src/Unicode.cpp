// SPDX-License-Identifier: GPL-3.0-or-later
#include "Unicode.h"

#include <unicode/uchar.h>

namespace kvscope::tokenizer {

char32_t Unicode::next(std::string_view text, std::size_t& i) {
    const auto lead = static_cast<unsigned char>(text[i]);
    const std::size_t length = sequenceLength(lead);
    if (length == 1 || i + length > text.size()) {
        ++i;
        return lead;
    }
    char32_t c = lead & (0xFF >> (length + 1));
    for (std::size_t k = 1; k < length; ++k) {
        c = (c << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
    }
    i += length;
    return c;
}

char32_t Unicode::previous(std::string_view text, std::size_t end) {
    std::size_t start = end - 1;
    while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) {
        --start;
    }
    return next(text, start);
}

void Unicode::append(std::string& out, char32_t c) {
    if (c < 0x80) {
        out.push_back(static_cast<char>(c));
    } else if (c < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (c >> 6)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (c >> 12)));
        out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (c >> 18)));
        out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
}

namespace {

// Length of the valid sequence at i, or 0 with `subpart` set to the length of the maximal invalid
// subpart (at least 1), following the Unicode "best practice" table the WHATWG decoder implements.
std::size_t validSequence(std::string_view s, std::size_t i, std::size_t& subpart) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    subpart = 1;
    if (b0 < 0x80) {
        return 1;
    }
    std::size_t need = 0;
    unsigned char lower = 0x80;
    unsigned char upper = 0xBF;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        need = 1;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        need = 2;
        if (b0 == 0xE0) {
            lower = 0xA0;
        } else if (b0 == 0xED) {
            upper = 0x9F;
        }
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        need = 3;
        if (b0 == 0xF0) {
            lower = 0x90;
        } else if (b0 == 0xF4) {
            upper = 0x8F;
        }
    } else {
        return 0;
    }
    for (std::size_t k = 1; k <= need; ++k) {
        if (i + k >= s.size()) {
            subpart = k;
            return 0;
        }
        const auto b = static_cast<unsigned char>(s[i + k]);
        if (b < lower || b > upper) {
            subpart = k;
            return 0;
        }
        lower = 0x80;
        upper = 0xBF;
    }
    return need + 1;
}

} // namespace

bool Unicode::isValidUtf8(std::string_view text) {
    std::size_t i = 0;
    while (i < text.size()) {
        if (static_cast<unsigned char>(text[i]) < 0x80) {
            ++i;
            continue;
        }
        std::size_t subpart = 0;
        const std::size_t length = validSequence(text, i, subpart);
        if (length == 0) {
            return false;
        }
        i += length;
    }
    return true;
}

std::string Unicode::lossyDecode(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size());
    std::size_t i = 0;
    while (i < bytes.size()) {
        std::size_t subpart = 0;
        const std::size_t length = validSequence(bytes, i, subpart);
        if (length > 0) {
            out.append(bytes.substr(i, length));
            i += length;
        } else {
            out.append("\xEF\xBF\xBD");
            i += subpart;
        }
    }
    return out;
}

bool Unicode::isWhitespace(char32_t c) {
    if (c < 0x80) {
        return c == ' ' || (c >= 0x09 && c <= 0x0D);
    }
    return u_hasBinaryProperty(static_cast<UChar32>(c), UCHAR_WHITE_SPACE);
}

bool Unicode::isNumeric(char32_t c) {
    if (c < 0x80) {
        return c >= '0' && c <= '9';
    }
    const auto type = u_charType(static_cast<UChar32>(c));
    return type == U_DECIMAL_DIGIT_NUMBER || type == U_LETTER_NUMBER || type == U_OTHER_NUMBER;
}

bool Unicode::isAlphanumeric(char32_t c) {
    if (c < 0x80) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    }
    return u_hasBinaryProperty(static_cast<UChar32>(c), UCHAR_ALPHABETIC) || isNumeric(c);
}

} // namespace kvscope::tokenizer
