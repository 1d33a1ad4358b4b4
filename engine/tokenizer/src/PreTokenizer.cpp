// SPDX-License-Identifier: GPL-3.0-or-later
#include "PreTokenizer.h"

#include "ByteLevelAlphabet.h"
#include "ComponentJson.h"
#include "OnigRegex.h"
#include "Unicode.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <string>

namespace kvscope::tokenizer {

namespace {

constexpr std::string_view kPreTokenizerComponent = "pre_tokenizer";
constexpr std::string_view kPreTokenizerSupported = "ByteLevel, Split, Metaspace, Digits, Sequence";
constexpr std::string_view kBehaviours = "Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous";

enum class Behaviour { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

Behaviour parseBehaviour(const std::string& name, std::string_view component) {
    if (name == "Removed") {
        return Behaviour::Removed;
    }
    if (name == "Isolated") {
        return Behaviour::Isolated;
    }
    if (name == "MergedWithPrevious") {
        return Behaviour::MergedWithPrevious;
    }
    if (name == "MergedWithNext") {
        return Behaviour::MergedWithNext;
    }
    if (name == "Contiguous") {
        return Behaviour::Contiguous;
    }
    ComponentJson::refuse(component, "behavior", name, kBehaviours);
}

struct SplitSegment {
    std::size_t begin;
    std::size_t end;
    bool isMatch;
};

// Hugging Face's NormalizedString::split: the text as alternating match / non-match segments,
// folded according to the behaviour, then sliced; empty pieces are dropped by the caller.
void splitSegments(const NormalizedString& piece, const std::vector<SplitSegment>& segments, Behaviour behaviour,
                   std::vector<NormalizedString>& out) {
    struct Kept {
        std::size_t begin;
        std::size_t end;
    };
    std::vector<Kept> kept;
    kept.reserve(segments.size());
    switch (behaviour) {
    case Behaviour::Removed:
        for (const SplitSegment& s : segments) {
            if (!s.isMatch) {
                kept.push_back({s.begin, s.end});
            }
        }
        break;
    case Behaviour::Isolated:
        for (const SplitSegment& s : segments) {
            kept.push_back({s.begin, s.end});
        }
        break;
    case Behaviour::Contiguous: {
        bool previousMatch = false;
        for (const SplitSegment& s : segments) {
            if (s.isMatch == previousMatch && !kept.empty()) {
                kept.back().end = s.end;
            } else {
                kept.push_back({s.begin, s.end});
            }
            previousMatch = s.isMatch;
        }
        break;
    }
    case Behaviour::MergedWithPrevious: {
        bool previousMatch = false;
        for (const SplitSegment& s : segments) {
            if (s.isMatch && !previousMatch && !kept.empty()) {
                kept.back().end = s.end;
            } else {
                kept.push_back({s.begin, s.end});
            }
            previousMatch = s.isMatch;
        }
        break;
    }
    case Behaviour::MergedWithNext: {
        bool previousMatch = false;
        for (auto it = segments.rbegin(); it != segments.rend(); ++it) {
            if (it->isMatch && !previousMatch && !kept.empty()) {
                kept.back().begin = it->begin;
            } else {
                kept.push_back({it->begin, it->end});
            }
            previousMatch = it->isMatch;
        }
        std::reverse(kept.begin(), kept.end());
        break;
    }
    }
    for (const Kept& k : kept) {
        if (k.end > k.begin) {
            out.push_back(k.begin == 0 && k.end == piece.size() ? piece : piece.slice(k.begin, k.end));
        }
    }
}

// Match ranges -> alternating segments (Hugging Face's Pattern::find_matches), optionally inverted.
void toSegments(std::size_t length, const std::vector<std::pair<std::size_t, std::size_t>>& matches, bool invert,
                std::vector<SplitSegment>& segments) {
    segments.clear();
    std::size_t previous = 0;
    for (const auto& [begin, end] : matches) {
        if (previous != begin) {
            segments.push_back({previous, begin, invert});
        }
        segments.push_back({begin, end, !invert});
        previous = end;
    }
    if (previous != length) {
        segments.push_back({previous, length, invert});
    }
}

void findLiteral(const std::string& text, const std::string& literal,
                 std::vector<std::pair<std::size_t, std::size_t>>& matches) {
    matches.clear();
    if (literal.empty()) {
        return;
    }
    std::size_t position = 0;
    while ((position = text.find(literal, position)) != std::string::npos) {
        matches.emplace_back(position, position + literal.size());
        position += literal.size();
    }
}

class SplitPreTokenizer : public PreTokenizer {
public:
    SplitPreTokenizer(const std::string& pattern, bool isRegex, Behaviour behaviour, bool invert)
        : m_literal(pattern), m_behaviour(behaviour), m_invert(invert) {
        if (isRegex) {
            m_regex = std::make_unique<OnigRegex>(pattern, "pre_tokenizer Split");
        }
    }

    void preTokenize(std::vector<NormalizedString>& pieces) const override {
        std::vector<NormalizedString> out;
        out.reserve(pieces.size() * 4);
        std::vector<std::pair<std::size_t, std::size_t>> matches;
        std::vector<SplitSegment> segments;
        for (const NormalizedString& piece : pieces) {
            if (m_regex) {
                m_regex->findAll(piece.text(), matches);
            } else {
                findLiteral(piece.text(), m_literal, matches);
            }
            toSegments(piece.size(), matches, m_invert, segments);
            splitSegments(piece, segments, m_behaviour, out);
        }
        pieces.swap(out);
    }

private:
    std::string m_literal;
    std::unique_ptr<OnigRegex> m_regex;
    Behaviour m_behaviour;
    bool m_invert;
};

class ByteLevelPreTokenizer : public PreTokenizer {
public:
    ByteLevelPreTokenizer(bool addPrefixSpace, bool useRegex) : m_addPrefixSpace(addPrefixSpace) {
        if (useRegex) {
            // GPT-2's pattern, as Hugging Face's ByteLevel compiles it.
            m_regex = std::make_unique<OnigRegex>(
                R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)", "pre_tokenizer ByteLevel");
        }
    }

    void preTokenize(std::vector<NormalizedString>& pieces) const override {
        std::vector<NormalizedString> split;
        split.reserve(pieces.size());
        std::vector<std::pair<std::size_t, std::size_t>> matches;
        std::vector<SplitSegment> segments;
        for (NormalizedString& piece : pieces) {
            if (m_addPrefixSpace && (piece.empty() || piece.text()[0] != ' ')) {
                piece = piece.prepend(" ");
            }
            if (m_regex) {
                m_regex->findAll(piece.text(), matches);
                toSegments(piece.size(), matches, false, segments);
                splitSegments(piece, segments, Behaviour::Isolated, split);
            } else if (!piece.empty()) {
                split.push_back(std::move(piece));
            }
        }
        pieces.clear();
        for (const NormalizedString& piece : split) {
            pieces.push_back(ByteLevelAlphabet::encode(piece));
        }
    }

private:
    bool m_addPrefixSpace;
    std::unique_ptr<OnigRegex> m_regex;
};

enum class PrependScheme { Always, First, Never };

class MetaspacePreTokenizer : public PreTokenizer {
public:
    MetaspacePreTokenizer(std::string replacement, PrependScheme scheme, bool split)
        : m_replacement(std::move(replacement)), m_scheme(scheme), m_split(split) {}

    void preTokenize(std::vector<NormalizedString>& pieces) const override {
        std::vector<NormalizedString> out;
        out.reserve(pieces.size() * 4);
        std::vector<std::pair<std::size_t, std::size_t>> matches;
        std::vector<SplitSegment> segments;
        for (const NormalizedString& piece : pieces) {
            NormalizedString replaced = piece.replaceLiteral(" ", m_replacement);
            const bool startsWithReplacement = replaced.text().starts_with(m_replacement);
            // "first" prepends only to the piece that starts the input (Hugging Face tests offset 0).
            if (!startsWithReplacement && (m_scheme == PrependScheme::Always ||
                                           (m_scheme == PrependScheme::First && piece.originalStart() == 0))) {
                replaced = replaced.prepend(m_replacement);
            }
            if (m_split) {
                findLiteral(replaced.text(), m_replacement, matches);
                toSegments(replaced.size(), matches, false, segments);
                splitSegments(replaced, segments, Behaviour::MergedWithNext, out);
            } else if (!replaced.empty()) {
                out.push_back(std::move(replaced));
            }
        }
        pieces.swap(out);
    }

private:
    std::string m_replacement;
    PrependScheme m_scheme;
    bool m_split;
};

class DigitsPreTokenizer : public PreTokenizer {
public:
    explicit DigitsPreTokenizer(bool individual) : m_individual(individual) {}

    void preTokenize(std::vector<NormalizedString>& pieces) const override {
        std::vector<NormalizedString> out;
        out.reserve(pieces.size() * 2);
        std::vector<SplitSegment> segments;
        for (const NormalizedString& piece : pieces) {
            segments.clear();
            const std::string& s = piece.text();
            std::size_t i = 0;
            // Hugging Face's char-predicate pattern: every digit is its own match, the text between
            // digits one non-match.
            std::size_t runStart = 0;
            while (i < s.size()) {
                const std::size_t begin = i;
                if (Unicode::isNumeric(Unicode::next(s, i))) {
                    if (runStart < begin) {
                        segments.push_back({runStart, begin, false});
                    }
                    segments.push_back({begin, i, true});
                    runStart = i;
                }
            }
            if (runStart < s.size()) {
                segments.push_back({runStart, s.size(), false});
            }
            splitSegments(piece, segments, m_individual ? Behaviour::Isolated : Behaviour::Contiguous, out);
        }
        pieces.swap(out);
    }

private:
    bool m_individual;
};

class SequencePreTokenizer : public PreTokenizer {
public:
    explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> steps) : m_steps(std::move(steps)) {}
    void preTokenize(std::vector<NormalizedString>& pieces) const override {
        for (const auto& step : m_steps) {
            step->preTokenize(pieces);
        }
    }

private:
    std::vector<std::unique_ptr<PreTokenizer>> m_steps;
};

} // namespace

std::unique_ptr<PreTokenizer> PreTokenizer::fromJson(const nlohmann::json& json) {
    if (json.is_null()) {
        return nullptr;
    }
    const std::string type = ComponentJson::type(json, kPreTokenizerComponent);
    if (type == "Split") {
        bool isRegex = false;
        const std::string pattern = ComponentJson::pattern(json, "pre_tokenizer Split", isRegex);
        const Behaviour behaviour =
            parseBehaviour(ComponentJson::string(json, "behavior", "pre_tokenizer Split", "Isolated"), "pre_tokenizer Split");
        return std::make_unique<SplitPreTokenizer>(pattern, isRegex, behaviour,
                                                   ComponentJson::boolean(json, "invert", "pre_tokenizer Split", false));
    }
    if (type == "ByteLevel") {
        return std::make_unique<ByteLevelPreTokenizer>(
            ComponentJson::boolean(json, "add_prefix_space", "pre_tokenizer ByteLevel", true),
            ComponentJson::boolean(json, "use_regex", "pre_tokenizer ByteLevel", true));
    }
    if (type == "Metaspace") {
        const std::string replacement = ComponentJson::string(json, "replacement", "pre_tokenizer Metaspace", "\u2581");
        std::string scheme = ComponentJson::string(json, "prepend_scheme", "pre_tokenizer Metaspace", "");
        if (scheme.empty()) {
            // Files older than prepend_scheme say add_prefix_space instead.
            scheme = ComponentJson::boolean(json, "add_prefix_space", "pre_tokenizer Metaspace", true) ? "always" : "never";
        }
        PrependScheme prepend = PrependScheme::Always;
        if (scheme == "first") {
            prepend = PrependScheme::First;
        } else if (scheme == "never") {
            prepend = PrependScheme::Never;
        } else if (scheme != "always") {
            ComponentJson::refuse("pre_tokenizer Metaspace", "prepend_scheme", scheme, "always, first, never");
        }
        if (replacement.empty()) {
            throw TokenizerError("pre_tokenizer Metaspace: \"replacement\" must be one character");
        }
        return std::make_unique<MetaspacePreTokenizer>(replacement, prepend,
                                                       ComponentJson::boolean(json, "split", "pre_tokenizer Metaspace", true));
    }
    if (type == "Digits") {
        return std::make_unique<DigitsPreTokenizer>(
            ComponentJson::boolean(json, "individual_digits", "pre_tokenizer Digits", false));
    }
    if (type == "Sequence") {
        std::vector<std::unique_ptr<PreTokenizer>> steps;
        for (const auto& item : ComponentJson::array(json, "pretokenizers", "pre_tokenizer Sequence")) {
            if (auto step = fromJson(item)) {
                steps.push_back(std::move(step));
            }
        }
        return std::make_unique<SequencePreTokenizer>(std::move(steps));
    }
    ComponentJson::refuse(kPreTokenizerComponent, "type", type, kPreTokenizerSupported);
}

} // namespace kvscope::tokenizer
