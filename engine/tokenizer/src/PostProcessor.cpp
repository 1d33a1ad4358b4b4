// SPDX-License-Identifier: GPL-3.0-or-later
#include "PostProcessor.h"

#include "ByteLevelAlphabet.h"
#include "ComponentJson.h"
#include "Unicode.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace kvscope::tokenizer {

namespace {

constexpr std::string_view kPostProcessorComponent = "post_processor";
constexpr std::string_view kPostProcessorSupported = "TemplateProcessing, ByteLevel, Sequence";

class TemplatePostProcessor : public PostProcessor {
public:
    TemplatePostProcessor(std::vector<EncodedToken> prefix, std::vector<EncodedToken> suffix)
        : m_prefix(std::move(prefix)), m_suffix(std::move(suffix)) {}

    void process(std::vector<EncodedToken>& tokens, bool addSpecialTokens) const override {
        if (!addSpecialTokens) {
            return;
        }
        tokens.insert(tokens.begin(), m_prefix.begin(), m_prefix.end());
        tokens.insert(tokens.end(), m_suffix.begin(), m_suffix.end());
    }

private:
    std::vector<EncodedToken> m_prefix;
    std::vector<EncodedToken> m_suffix;
};

std::unique_ptr<PostProcessor> templateFromJson(const nlohmann::json& json) {
    constexpr std::string_view component = "post_processor TemplateProcessing";
    const auto& single = ComponentJson::array(json, "single", component);
    const auto specials = json.find("special_tokens");
    std::vector<EncodedToken> prefix;
    std::vector<EncodedToken> suffix;
    bool seenSequence = false;
    for (const auto& item : single) {
        if (item.contains("Sequence")) {
            const std::string id = ComponentJson::string(item["Sequence"], "id", component);
            if (id != "A" || seenSequence) {
                ComponentJson::refuse(component, "single-sequence template item", item.dump(), "one Sequence \"A\"");
            }
            seenSequence = true;
        } else if (item.contains("SpecialToken")) {
            const std::string name = ComponentJson::string(item["SpecialToken"], "id", component);
            if (specials == json.end() || !specials->is_object() || !specials->contains(name)) {
                throw TokenizerError(std::string(component) + ": special token '" + name +
                                     "' is used by the template but missing from \"special_tokens\"");
            }
            const auto& entry = (*specials)[name];
            const auto& ids = ComponentJson::array(entry, "ids", component);
            const auto& strings = ComponentJson::array(entry, "tokens", component);
            if (ids.size() != strings.size()) {
                throw TokenizerError(std::string(component) + ": special token '" + name +
                                     "' has different numbers of ids and tokens");
            }
            for (std::size_t k = 0; k < ids.size(); ++k) {
                if (!ComponentJson::isIndex(ids[k]) || !strings[k].is_string()) {
                    throw TokenizerError(std::string(component) + ": special token '" + name + "' has a bad id or token");
                }
                (seenSequence ? suffix : prefix).push_back({ids[k].get<std::uint32_t>(), strings[k].get<std::string>(), {0, 0}});
            }
        } else {
            ComponentJson::refuse(component, "template item", item.dump(), "Sequence, SpecialToken");
        }
    }
    return std::make_unique<TemplatePostProcessor>(std::move(prefix), std::move(suffix));
}

bool isSpaceLike(char32_t c) {
    // 'Ġ' is the byte-level form of the space byte.
    return c == 0x120 || Unicode::isWhitespace(c);
}

class ByteLevelPostProcessor : public PostProcessor {
public:
    ByteLevelPostProcessor(bool trimOffsets, bool addPrefixSpace)
        : m_trimOffsets(trimOffsets), m_addPrefixSpace(addPrefixSpace) {}

    void process(std::vector<EncodedToken>& tokens, bool) const override {
        if (!m_trimOffsets) {
            return;
        }
        for (std::size_t i = 0; i < tokens.size(); ++i) {
            EncodedToken& token = tokens[i];
            const std::string& s = token.token;
            std::uint32_t leading = 0;
            std::size_t at = 0;
            while (at < s.size()) {
                std::size_t next = at;
                if (!isSpaceLike(Unicode::next(s, next))) {
                    break;
                }
                ++leading;
                at = next;
            }
            std::uint32_t trailing = 0;
            if (at < s.size()) {
                std::size_t end = s.size();
                while (end > 0 && isSpaceLike(Unicode::previous(s, end))) {
                    ++trailing;
                    end -= 1;
                    while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) {
                        --end;
                    }
                }
            }
            if (leading > 0) {
                const bool isFirst = i == 0 || token.offsets.start == 0;
                if (isFirst && m_addPrefixSpace && leading == 1) {
                    leading = 0;
                }
                token.offsets.start = std::min(token.offsets.start + leading, token.offsets.end);
            }
            if (trailing > 0 && token.offsets.end >= trailing) {
                token.offsets.end = std::max(token.offsets.end - trailing, token.offsets.start);
            }
        }
    }

private:
    bool m_trimOffsets;
    bool m_addPrefixSpace;
};

class SequencePostProcessor : public PostProcessor {
public:
    explicit SequencePostProcessor(std::vector<std::unique_ptr<PostProcessor>> steps) : m_steps(std::move(steps)) {}
    void process(std::vector<EncodedToken>& tokens, bool addSpecialTokens) const override {
        for (const auto& step : m_steps) {
            step->process(tokens, addSpecialTokens);
        }
    }

private:
    std::vector<std::unique_ptr<PostProcessor>> m_steps;
};

} // namespace

std::unique_ptr<PostProcessor> PostProcessor::fromJson(const nlohmann::json& json) {
    if (json.is_null()) {
        return nullptr;
    }
    const std::string type = ComponentJson::type(json, kPostProcessorComponent);
    if (type == "TemplateProcessing") {
        return templateFromJson(json);
    }
    if (type == "ByteLevel") {
        return std::make_unique<ByteLevelPostProcessor>(
            ComponentJson::boolean(json, "trim_offsets", "post_processor ByteLevel", true),
            ComponentJson::boolean(json, "add_prefix_space", "post_processor ByteLevel", true));
    }
    if (type == "Sequence") {
        std::vector<std::unique_ptr<PostProcessor>> steps;
        for (const auto& item : ComponentJson::array(json, "processors", "post_processor Sequence")) {
            if (auto step = fromJson(item)) {
                steps.push_back(std::move(step));
            }
        }
        return std::make_unique<SequencePostProcessor>(std::move(steps));
    }
    ComponentJson::refuse(kPostProcessorComponent, "type", type, kPostProcessorSupported);
}

std::unique_ptr<PostProcessor> PostProcessor::bosEosTemplate(const std::vector<EncodedToken>& prefix,
                                                             const std::vector<EncodedToken>& suffix) {
    return std::make_unique<TemplatePostProcessor>(prefix, suffix);
}

} // namespace kvscope::tokenizer
