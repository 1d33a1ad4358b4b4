// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvscope::runtime {

/// How a run turns its prompt into token ids and its tokens back into text: the built-in byte
/// tokenizer, or (later) a checkpoint's own tokenizer. Sessions record what it says, so a replay shows
/// words without it.
class TextCodec {
public:
    virtual ~TextCodec() = default;
    /// What a session records as its tokenizer ("bytes", or where a tokenizer was loaded from).
    virtual std::string name() const = 0;
    /// The prompt's ids as the model expects them (bos where its tokenizer adds one).
    virtual std::vector<std::int64_t> encode(std::string_view text) const = 0;
    /// `message` as the user's turn in the model's chat template with the assistant's opening after it,
    /// encoded as apply_chat_template encodes it (no special tokens added); GenerationError where the model
    /// has no chat template kvscope can render.
    virtual std::vector<std::int64_t> encodeChat(std::string_view message) const = 0;
    /// The text of ids, special tokens left out.
    virtual std::string decode(const std::vector<std::int64_t>& ids) const = 0;
    /// One token as a reader should see it in a strip of tokens, special tokens named ("<bos>").
    virtual std::string piece(std::int64_t id) const = 0;
    /// The token that ends a generation, if the tokenizer has one.
    virtual std::optional<std::int64_t> eosId() const = 0;
    /// What a finished beam continues with.
    virtual std::int64_t padId() const = 0;
};

} // namespace kvscope::runtime
