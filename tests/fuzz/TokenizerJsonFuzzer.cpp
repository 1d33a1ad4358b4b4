// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: loading any tokenizer.json must either refuse with TokenizerError or give a tokenizer
// that encodes and decodes without crashing, hanging or throwing anything else.
// Input: tokenizer.json bytes, optionally followed by a NUL byte and a text to encode.
// Build: CC=clang CXX=clang++ cmake --preset dev -B build/fuzz && ninja -C build/fuzz TokenizerJsonFuzzer
// Run:   build/fuzz/tests/fuzz/TokenizerJsonFuzzer -max_len=8192 -rss_limit_mb=2048 tests/fuzz/tokenizer-seeds
#include "kvscope/tokenizer/Tokenizer.h"
#include "kvscope/tokenizer/TokenizerError.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    const std::size_t nul = input.find('\0');
    const std::string_view json = input.substr(0, nul);
    const std::string_view text = nul == std::string_view::npos ? std::string_view("Hello world! 12345 caf\u00e9 \u2581 <s>")
                                                                : input.substr(nul + 1);
    try {
        const auto tokenizer = kvscope::tokenizer::Tokenizer::fromJson(json);
        try {
            const auto encoding = tokenizer.encode(text);
            if (encoding.tokens.size() != encoding.ids.size() || encoding.offsets.size() != encoding.ids.size()) {
                __builtin_trap();
            }
            for (const auto& [begin, end] : encoding.offsets) {
                if (begin > end || end > text.size()) {
                    __builtin_trap();
                }
            }
            (void)tokenizer.decode(encoding.ids);
            (void)tokenizer.decode(encoding.ids, true);
        } catch (const kvscope::tokenizer::TokenizerError&) {
            // Invalid UTF-8 text, or ids a hand-made vocabulary cannot decode: refusals are answers.
        }
    } catch (const kvscope::tokenizer::TokenizerError&) {
        // A refusal with a message is a correct answer.
    }
    return 0;
}
