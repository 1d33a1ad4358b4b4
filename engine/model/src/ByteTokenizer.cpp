// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/model/ByteTokenizer.h"

#include "kvscope/model/ModelError.h"

namespace kvscope::model {
namespace {

void checkId(int64_t id) {
    if (id < 0 || id >= ByteTokenizer::kVocabSize) {
        throw ModelError("token id " + std::to_string(id) + " is outside the byte tokenizer's vocabulary (allowed: 0-" +
                         std::to_string(ByteTokenizer::kVocabSize - 1) + ")");
    }
}

} // namespace

std::vector<int64_t> ByteTokenizer::encode(std::string_view text, bool addBos) {
    std::vector<int64_t> ids;
    ids.reserve(text.size() + (addBos ? 1 : 0));
    if (addBos) {
        ids.push_back(kBos);
    }
    for (char c : text) {
        ids.push_back(static_cast<unsigned char>(c));
    }
    return ids;
}

std::string ByteTokenizer::decode(const std::vector<int64_t>& ids) {
    std::string text;
    text.reserve(ids.size());
    for (int64_t id : ids) {
        checkId(id);
        if (id < 256) {
            text.push_back(static_cast<char>(static_cast<unsigned char>(id)));
        }
    }
    return text;
}

std::string ByteTokenizer::tokenText(int64_t id) {
    checkId(id);
    switch (id) {
    case kBos:
        return "<bos>";
    case kEos:
        return "<eos>";
    case kPad:
        return "<pad>";
    default:
        return std::string(1, static_cast<char>(static_cast<unsigned char>(id)));
    }
}

std::string ByteTokenizer::render(const std::vector<int64_t>& ids) {
    std::string text;
    for (int64_t id : ids) {
        if (id >= 0 && id < 256) {
            text.push_back(static_cast<char>(static_cast<unsigned char>(id)));
        } else if (id < 0 || id >= kVocabSize) {
            text += "<id:" + std::to_string(id) + ">";
        }
    }
    return text;
}

} // namespace kvscope::model
