// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "NormalizedString.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kvscope::tokenizer {

/// A token on its way out of encode: id, token string and original byte span.
struct EncodedToken {
    std::uint32_t id;
    std::string token;
    Span offsets;
};

/// A tokenizer.json post-processor (TemplateProcessing, ByteLevel, Sequence): adds the special
/// tokens a model expects around a single sequence (bos/eos) and adjusts offsets.
class PostProcessor {
public:
    virtual ~PostProcessor() = default;
    virtual void process(std::vector<EncodedToken>& tokens, bool addSpecialTokens) const = 0;

    /// null gives nullptr; unknown types and pair-only features are refused by name.
    static std::unique_ptr<PostProcessor> fromJson(const nlohmann::json& json);
    /// The template transformers builds for Llama/Gemma tokenizers from add_bos_token/add_eos_token.
    static std::unique_ptr<PostProcessor> bosEosTemplate(const std::vector<EncodedToken>& prefix,
                                                         const std::vector<EncodedToken>& suffix);
};

} // namespace kvscope::tokenizer
