// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kvscope::model {

/// The built-in models' tokenizer: one token per byte (0-255) plus three specials, so that any text
/// is a prompt and any output is text without a vocabulary file.
class ByteTokenizer {
public:
    static constexpr int64_t kBos = 256;
    static constexpr int64_t kEos = 257;
    static constexpr int64_t kPad = 258;
    static constexpr int64_t kVocabSize = 259;

    /// The bytes of `text`, after a bos token when `addBos`.
    static std::vector<int64_t> encode(std::string_view text, bool addBos = true);
    /// The bytes of the byte tokens; specials are dropped. Refuses ids outside [0, vocabSize).
    static std::string decode(const std::vector<int64_t>& ids);
    /// One token as text: its byte, or "<bos>", "<eos>", "<pad>".
    static std::string tokenText(int64_t id);
    /// Text for any ids, e.g. of a checkpoint with a larger vocabulary: bytes as bytes, specials
    /// dropped, other ids as "<id:N>".
    static std::string render(const std::vector<int64_t>& ids);
};

} // namespace kvscope::model
