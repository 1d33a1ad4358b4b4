// SPDX-License-Identifier: GPL-3.0-or-later
#include "Normalizer.h"

#include "ComponentJson.h"
#include "OnigRegex.h"
#include "Unicode.h"

#include <nlohmann/json.hpp>
#include <unicode/bytestream.h>
#include <unicode/casemap.h>
#include <unicode/edits.h>
#include <unicode/normalizer2.h>

#include <vector>

namespace kvscope::tokenizer {

namespace {

constexpr std::string_view kNormalizerComponent = "normalizer";
constexpr std::string_view kNormalizerSupported = "NFC, NFD, NFKC, NFKD, Lowercase, Strip, Replace, Prepend, Sequence";

// Rebuilds the alignment of an ICU transformation from its edit list: unchanged bytes keep their
// own origin, each changed stretch maps onto the original span of what it replaced.
NormalizedString applyEdits(const NormalizedString& source, const std::string& output, const icu::Edits& edits) {
    NormalizedString::Builder builder(output.size());
    UErrorCode status = U_ZERO_ERROR;
    icu::Edits::Iterator it = edits.getFineIterator();
    while (it.next(status)) {
        const auto from = static_cast<std::size_t>(it.sourceIndex());
        const auto to = static_cast<std::size_t>(it.destinationIndex());
        const auto oldLength = static_cast<std::size_t>(it.oldLength());
        const auto newLength = static_cast<std::size_t>(it.newLength());
        if (!it.hasChange()) {
            builder.appendFrom(source, from, from + oldLength);
        } else if (newLength > 0) {
            builder.append(std::string_view(output).substr(to, newLength), source.originalSpan(from, from + oldLength));
        }
    }
    return std::move(builder).finish();
}

class UnicodeNormalizer : public Normalizer {
public:
    explicit UnicodeNormalizer(const std::string& form) {
        UErrorCode status = U_ZERO_ERROR;
        if (form == "NFC") {
            m_normalizer = icu::Normalizer2::getNFCInstance(status);
        } else if (form == "NFD") {
            m_normalizer = icu::Normalizer2::getNFDInstance(status);
        } else if (form == "NFKC") {
            m_normalizer = icu::Normalizer2::getNFKCInstance(status);
        } else {
            m_normalizer = icu::Normalizer2::getNFKDInstance(status);
        }
        if (U_FAILURE(status)) {
            throw TokenizerError(std::string("normalizer ") + form + ": ICU has no data (" + u_errorName(status) + ")");
        }
    }

    NormalizedString normalize(const NormalizedString& text) const override {
        UErrorCode status = U_ZERO_ERROR;
        // Most text is already normalized: the quick check avoids the copy and the edit list.
        if (m_normalizer->isNormalizedUTF8(text.text(), status) && U_SUCCESS(status)) {
            return text;
        }
        status = U_ZERO_ERROR;
        std::string output;
        icu::StringByteSink<std::string> sink(&output);
        icu::Edits edits;
        m_normalizer->normalizeUTF8(0, text.text(), sink, &edits, status);
        if (U_FAILURE(status)) {
            throw TokenizerError(std::string("normalizer: ICU normalization failed (") + u_errorName(status) + ")");
        }
        return applyEdits(text, output, edits);
    }

private:
    const icu::Normalizer2* m_normalizer = nullptr;
};

class LowercaseNormalizer : public Normalizer {
public:
    NormalizedString normalize(const NormalizedString& text) const override {
        UErrorCode status = U_ZERO_ERROR;
        std::string output;
        icu::StringByteSink<std::string> sink(&output);
        icu::Edits edits;
        icu::CaseMap::utf8ToLower("", 0, text.text(), sink, &edits, status);
        if (U_FAILURE(status)) {
            throw TokenizerError(std::string("normalizer Lowercase: ICU failed (") + u_errorName(status) + ")");
        }
        if (!edits.hasChanges()) {
            return text;
        }
        return applyEdits(text, output, edits);
    }
};

class StripNormalizer : public Normalizer {
public:
    StripNormalizer(bool left, bool right) : m_left(left), m_right(right) {}

    NormalizedString normalize(const NormalizedString& text) const override {
        const std::string& s = text.text();
        std::size_t begin = 0;
        std::size_t end = s.size();
        if (m_left) {
            while (begin < end) {
                std::size_t next = begin;
                if (!Unicode::isWhitespace(Unicode::next(s, next))) {
                    break;
                }
                begin = next;
            }
        }
        if (m_right) {
            while (end > begin) {
                std::size_t start = end - 1;
                while (start > begin && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) {
                    --start;
                }
                std::size_t probe = start;
                if (!Unicode::isWhitespace(Unicode::next(s, probe))) {
                    break;
                }
                end = start;
            }
        }
        return begin == 0 && end == s.size() ? text : text.slice(begin, end);
    }

private:
    bool m_left;
    bool m_right;
};

class ReplaceNormalizer : public Normalizer {
public:
    ReplaceNormalizer(const std::string& pattern, bool isRegex, std::string content)
        : m_pattern(pattern), m_content(std::move(content)) {
        if (isRegex) {
            m_regex = std::make_unique<OnigRegex>(pattern, "normalizer Replace");
        }
    }

    NormalizedString normalize(const NormalizedString& text) const override {
        if (!m_regex) {
            return text.replaceLiteral(m_pattern, m_content);
        }
        std::vector<std::pair<std::size_t, std::size_t>> matches;
        m_regex->findAll(text.text(), matches);
        if (matches.empty()) {
            return text;
        }
        NormalizedString::Builder builder(text.size());
        std::size_t position = 0;
        for (const auto& [begin, end] : matches) {
            builder.appendFrom(text, position, begin);
            builder.append(m_content, text.originalSpan(begin, end));
            position = end;
        }
        builder.appendFrom(text, position, text.size());
        return std::move(builder).finish();
    }

private:
    std::string m_pattern;
    std::string m_content;
    std::unique_ptr<OnigRegex> m_regex;
};

class PrependNormalizer : public Normalizer {
public:
    explicit PrependNormalizer(std::string prefix) : m_prefix(std::move(prefix)) {}
    NormalizedString normalize(const NormalizedString& text) const override { return text.prepend(m_prefix); }

private:
    std::string m_prefix;
};

class SequenceNormalizer : public Normalizer {
public:
    explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> normalizers)
        : m_normalizers(std::move(normalizers)) {}

    NormalizedString normalize(const NormalizedString& text) const override {
        NormalizedString current = text;
        for (const auto& normalizer : m_normalizers) {
            current = normalizer->normalize(current);
        }
        return current;
    }

private:
    std::vector<std::unique_ptr<Normalizer>> m_normalizers;
};

} // namespace

std::unique_ptr<Normalizer> Normalizer::fromJson(const nlohmann::json& json) {
    if (json.is_null()) {
        return nullptr;
    }
    const std::string type = ComponentJson::type(json, kNormalizerComponent);
    if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD") {
        return std::make_unique<UnicodeNormalizer>(type);
    }
    if (type == "Lowercase") {
        return std::make_unique<LowercaseNormalizer>();
    }
    if (type == "Strip") {
        return std::make_unique<StripNormalizer>(ComponentJson::boolean(json, "strip_left", "normalizer Strip", true),
                                                 ComponentJson::boolean(json, "strip_right", "normalizer Strip", true));
    }
    if (type == "Replace") {
        bool isRegex = false;
        const std::string pattern = ComponentJson::pattern(json, "normalizer Replace", isRegex);
        return std::make_unique<ReplaceNormalizer>(pattern, isRegex,
                                                   ComponentJson::string(json, "content", "normalizer Replace"));
    }
    if (type == "Prepend") {
        return std::make_unique<PrependNormalizer>(ComponentJson::string(json, "prepend", "normalizer Prepend"));
    }
    if (type == "Sequence") {
        std::vector<std::unique_ptr<Normalizer>> normalizers;
        for (const auto& item : ComponentJson::array(json, "normalizers", "normalizer Sequence")) {
            if (auto normalizer = fromJson(item)) {
                normalizers.push_back(std::move(normalizer));
            }
        }
        return std::make_unique<SequenceNormalizer>(std::move(normalizers));
    }
    ComponentJson::refuse(kNormalizerComponent, "type", type, kNormalizerSupported);
}

} // namespace kvscope::tokenizer
