// SPDX-License-Identifier: GPL-3.0-or-later
#include "ByteLevelAlphabet.h"

#include "Unicode.h"

namespace kvscope::tokenizer {

namespace {

struct Tables {
    std::array<std::string, 256> chars;
    std::array<int, 512> bytes{}; // code point (all below 0x144) -> byte, -1 if none
    Tables() {
        bytes.fill(-1);
        std::array<bool, 256> printable{};
        for (int b = '!'; b <= '~'; ++b) {
            printable[static_cast<std::size_t>(b)] = true;
        }
        for (int b = 0xA1; b <= 0xAC; ++b) {
            printable[static_cast<std::size_t>(b)] = true;
        }
        for (int b = 0xAE; b <= 0xFF; ++b) {
            printable[static_cast<std::size_t>(b)] = true;
        }
        int extra = 0;
        for (int b = 0; b < 256; ++b) {
            const char32_t c = printable[static_cast<std::size_t>(b)] ? static_cast<char32_t>(b)
                                                                      : static_cast<char32_t>(256 + extra++);
            Unicode::append(chars[static_cast<std::size_t>(b)], c);
            bytes[c] = b;
        }
    }
};

const Tables& tables() {
    static const Tables instance;
    return instance;
}

} // namespace

const std::string& ByteLevelAlphabet::charFor(unsigned char b) { return tables().chars[b]; }

std::optional<unsigned char> ByteLevelAlphabet::byteFor(char32_t c) {
    if (c >= 512 || tables().bytes[c] < 0) {
        return std::nullopt;
    }
    return static_cast<unsigned char>(tables().bytes[c]);
}

NormalizedString ByteLevelAlphabet::encode(const NormalizedString& text) {
    const Tables& t = tables();
    const std::string& s = text.text();
    NormalizedString::Builder builder(s.size() * 2);
    std::size_t i = 0;
    while (i < s.size()) {
        const std::size_t length = Unicode::sequenceLength(static_cast<unsigned char>(s[i]));
        const std::size_t end = std::min(s.size(), i + length);
        const Span origin = text.originalSpan(i, end);
        for (std::size_t k = i; k < end; ++k) {
            builder.append(t.chars[static_cast<unsigned char>(s[k])], origin);
        }
        i = end;
    }
    return std::move(builder).finish();
}

void ByteLevelAlphabet::appendBytes(std::string_view token, std::string& bytes) {
    const std::size_t mark = bytes.size();
    std::size_t i = 0;
    while (i < token.size()) {
        const auto b = byteFor(Unicode::next(token, i));
        if (!b) {
            bytes.resize(mark);
            bytes.append(token);
            return;
        }
        bytes.push_back(static_cast<char>(*b));
    }
}

} // namespace kvscope::tokenizer
