// SPDX-License-Identifier: GPL-3.0-or-later
#include "Decoder.h"

#include "ByteLevelAlphabet.h"
#include "ComponentJson.h"
#include "OnigRegex.h"
#include "Unicode.h"

#include <nlohmann/json.hpp>

namespace kvscope::tokenizer {

namespace {

constexpr std::string_view kDecoderComponent = "decoder";
constexpr std::string_view kDecoderSupported = "ByteLevel, Metaspace, ByteFallback, Fuse, Strip, Replace, Sequence";

class ByteLevelDecoder : public Decoder {
public:
    explicit ByteLevelDecoder(const std::unordered_set<std::string>* added) : m_added(added) {}

    void decodeChain(std::vector<std::string>& tokens) const override {
        std::vector<std::string> out;
        std::string bytes;
        for (const std::string& token : tokens) {
            if (m_added != nullptr && m_added->contains(token)) {
                // Added tokens are text already (the JS reference flushes around them).
                if (!bytes.empty()) {
                    out.push_back(Unicode::lossyDecode(bytes));
                    bytes.clear();
                }
                out.push_back(token);
                continue;
            }
            ByteLevelAlphabet::appendBytes(token, bytes);
        }
        if (!bytes.empty()) {
            out.push_back(Unicode::lossyDecode(bytes));
        }
        tokens.swap(out);
    }

private:
    const std::unordered_set<std::string>* m_added;
};

class MetaspaceDecoder : public Decoder {
public:
    MetaspaceDecoder(std::string replacement, bool stripFirst)
        : m_replacement(std::move(replacement)), m_stripFirst(stripFirst) {}

    void decodeChain(std::vector<std::string>& tokens) const override {
        for (std::size_t i = 0; i < tokens.size(); ++i) {
            std::string& token = tokens[i];
            std::string out;
            out.reserve(token.size());
            std::size_t position = 0;
            while (position < token.size()) {
                if (token.compare(position, m_replacement.size(), m_replacement) == 0) {
                    out.push_back(' ');
                    position += m_replacement.size();
                } else {
                    out.push_back(token[position++]);
                }
            }
            if (i == 0 && m_stripFirst && !out.empty() && out[0] == ' ') {
                out.erase(0, 1);
            }
            token = std::move(out);
        }
    }

private:
    std::string m_replacement;
    bool m_stripFirst;
};

// "<0xAB>" -> 0xAB, else -1.
int byteToken(const std::string& token) {
    if (token.size() != 6 || token.compare(0, 3, "<0x") != 0 || token[5] != '>') {
        return -1;
    }
    int value = 0;
    for (std::size_t k = 3; k < 5; ++k) {
        const char c = token[k];
        value <<= 4;
        if (c >= '0' && c <= '9') {
            value |= c - '0';
        } else if (c >= 'A' && c <= 'F') {
            value |= c - 'A' + 10;
        } else if (c >= 'a' && c <= 'f') {
            value |= c - 'a' + 10;
        } else {
            return -1;
        }
    }
    return value;
}

class ByteFallbackDecoder : public Decoder {
public:
    void decodeChain(std::vector<std::string>& tokens) const override {
        std::vector<std::string> out;
        out.reserve(tokens.size());
        std::string bytes;
        std::size_t byteTokens = 0;
        auto flush = [&] {
            if (byteTokens == 0) {
                return;
            }
            // Hugging Face: valid UTF-8 becomes its text, otherwise one U+FFFD per byte token.
            if (Unicode::isValidUtf8(bytes)) {
                out.push_back(bytes);
            } else {
                for (std::size_t k = 0; k < byteTokens; ++k) {
                    out.emplace_back("\xEF\xBF\xBD");
                }
            }
            bytes.clear();
            byteTokens = 0;
        };
        for (std::string& token : tokens) {
            const int value = byteToken(token);
            if (value >= 0) {
                bytes.push_back(static_cast<char>(value));
                ++byteTokens;
                continue;
            }
            flush();
            out.push_back(std::move(token));
        }
        flush();
        tokens.swap(out);
    }
};

class FuseDecoder : public Decoder {
public:
    void decodeChain(std::vector<std::string>& tokens) const override {
        std::string joined;
        for (const std::string& token : tokens) {
            joined += token;
        }
        tokens.assign(1, std::move(joined));
    }
};

class StripDecoder : public Decoder {
public:
    StripDecoder(std::string content, std::size_t start, std::size_t stop)
        : m_content(std::move(content)), m_start(start), m_stop(stop) {}

    void decodeChain(std::vector<std::string>& tokens) const override {
        for (std::string& token : tokens) {
            std::size_t begin = 0;
            for (std::size_t k = 0; k < m_start && token.compare(begin, m_content.size(), m_content) == 0 &&
                                    begin + m_content.size() <= token.size();
                 ++k) {
                begin += m_content.size();
            }
            std::size_t end = token.size();
            for (std::size_t k = 0; k < m_stop && end >= begin + m_content.size() &&
                                    token.compare(end - m_content.size(), m_content.size(), m_content) == 0;
                 ++k) {
                end -= m_content.size();
            }
            token = token.substr(begin, end - begin);
        }
    }

private:
    std::string m_content;
    std::size_t m_start;
    std::size_t m_stop;
};

class ReplaceDecoder : public Decoder {
public:
    ReplaceDecoder(const std::string& pattern, bool isRegex, std::string content)
        : m_pattern(pattern), m_content(std::move(content)) {
        if (isRegex) {
            m_regex = std::make_unique<OnigRegex>(pattern, "decoder Replace");
        }
    }

    void decodeChain(std::vector<std::string>& tokens) const override {
        std::vector<std::pair<std::size_t, std::size_t>> matches;
        for (std::string& token : tokens) {
            matches.clear();
            if (m_regex) {
                m_regex->findAll(token, matches);
            } else if (!m_pattern.empty()) {
                std::size_t position = 0;
                while ((position = token.find(m_pattern, position)) != std::string::npos) {
                    matches.emplace_back(position, position + m_pattern.size());
                    position += m_pattern.size();
                }
            }
            if (matches.empty()) {
                continue;
            }
            std::string out;
            std::size_t position = 0;
            for (const auto& [begin, end] : matches) {
                out.append(token, position, begin - position);
                out += m_content;
                position = end;
            }
            out.append(token, position);
            token = std::move(out);
        }
    }

private:
    std::string m_pattern;
    std::string m_content;
    std::unique_ptr<OnigRegex> m_regex;
};

class SequenceDecoder : public Decoder {
public:
    explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> steps) : m_steps(std::move(steps)) {}
    void decodeChain(std::vector<std::string>& tokens) const override {
        for (const auto& step : m_steps) {
            step->decodeChain(tokens);
        }
    }

private:
    std::vector<std::unique_ptr<Decoder>> m_steps;
};

std::size_t count(const nlohmann::json& json, const char* key, std::string_view component) {
    const auto it = json.find(key);
    if (it == json.end() || it->is_null()) {
        return 0;
    }
    if (!ComponentJson::isIndex(*it)) {
        throw TokenizerError(std::string(component) + ": \"" + key + "\" must be a non-negative integer");
    }
    return it->get<std::size_t>();
}

} // namespace

std::unique_ptr<Decoder> Decoder::fromJson(const nlohmann::json& json, const std::unordered_set<std::string>* added) {
    if (json.is_null()) {
        return nullptr;
    }
    const std::string type = ComponentJson::type(json, kDecoderComponent);
    if (type == "ByteLevel") {
        return std::make_unique<ByteLevelDecoder>(added);
    }
    if (type == "Metaspace") {
        std::string scheme = ComponentJson::string(json, "prepend_scheme", "decoder Metaspace", "");
        if (scheme.empty()) {
            scheme = ComponentJson::boolean(json, "add_prefix_space", "decoder Metaspace", true) ? "always" : "never";
        }
        return std::make_unique<MetaspaceDecoder>(ComponentJson::string(json, "replacement", "decoder Metaspace", "\u2581"),
                                                  scheme != "never");
    }
    if (type == "ByteFallback") {
        return std::make_unique<ByteFallbackDecoder>();
    }
    if (type == "Fuse") {
        return std::make_unique<FuseDecoder>();
    }
    if (type == "Strip") {
        return std::make_unique<StripDecoder>(ComponentJson::string(json, "content", "decoder Strip", " "),
                                              count(json, "start", "decoder Strip"), count(json, "stop", "decoder Strip"));
    }
    if (type == "Replace") {
        bool isRegex = false;
        const std::string pattern = ComponentJson::pattern(json, "decoder Replace", isRegex);
        return std::make_unique<ReplaceDecoder>(pattern, isRegex, ComponentJson::string(json, "content", "decoder Replace"));
    }
    if (type == "Sequence") {
        std::vector<std::unique_ptr<Decoder>> steps;
        for (const auto& item : ComponentJson::array(json, "decoders", "decoder Sequence")) {
            if (auto step = fromJson(item, added)) {
                steps.push_back(std::move(step));
            }
        }
        return std::make_unique<SequenceDecoder>(std::move(steps));
    }
    ComponentJson::refuse(kDecoderComponent, "type", type, kDecoderSupported);
}

} // namespace kvscope::tokenizer
