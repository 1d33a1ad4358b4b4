// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/runtime/ByteTextCodec.h"

#include "kvscope/runtime/GenerationError.h"

#include "kvscope/model/ByteTokenizer.h"

namespace kvscope::runtime {

std::vector<std::int64_t> ByteTextCodec::encodeChat(std::string_view) const {
    throw GenerationError("--chat needs a model with a chat template: a GGUF file (--model) carries one; the "
                          "built-in presets speak bytes and have none");
}

std::vector<std::int64_t> ByteTextCodec::encode(std::string_view text) const {
    return model::ByteTokenizer::encode(text);
}

std::string ByteTextCodec::decode(const std::vector<std::int64_t>& ids) const {
    return model::ByteTokenizer::render(ids);
}

std::string ByteTextCodec::piece(std::int64_t id) const {
    // Ids past the byte vocabulary (a checkpoint's) show as <id:N>, as render writes them.
    return id >= 0 && id < model::ByteTokenizer::kVocabSize ? model::ByteTokenizer::tokenText(id)
                                                             : model::ByteTokenizer::render({id});
}

std::optional<std::int64_t> ByteTextCodec::eosId() const { return model::ByteTokenizer::kEos; }

std::int64_t ByteTextCodec::padId() const { return model::ByteTokenizer::kPad; }

} // namespace kvscope::runtime
