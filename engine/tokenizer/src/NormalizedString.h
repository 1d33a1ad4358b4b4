// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kvscope::tokenizer {

/// A byte range [start, end) of the original input text.
struct Span {
    std::uint32_t start = 0;
    std::uint32_t end = 0;
};

/// Text on its way through normalizers and pre-tokenizers, remembering for every byte which bytes
/// of the original input it came from: that is how encode reports offsets into the user's text after
/// NFC, metaspace replacement or byte-level mapping. Untouched text keeps no table (identity from a
/// base offset), so the common path of byte-level tokenizers allocates one string per piece.
class NormalizedString {
public:
    NormalizedString() = default;
    /// Original text starting at byte `originalStart` of the input (identity alignment).
    NormalizedString(std::string_view text, std::uint32_t originalStart)
        : m_text(text), m_base(originalStart) {}

    const std::string& text() const { return m_text; }
    bool empty() const { return m_text.empty(); }
    std::size_t size() const { return m_text.size(); }

    /// Original bytes behind normalized byte i.
    Span alignment(std::size_t i) const {
        return m_align.empty() ? Span{m_base + static_cast<std::uint32_t>(i), m_base + static_cast<std::uint32_t>(i) + 1}
                               : m_align[i];
    }
    /// Original range covered by normalized bytes [begin, end); an empty range maps to an empty span.
    Span originalSpan(std::size_t begin, std::size_t end) const;
    /// Start of this text in the original input (Metaspace's prepend_scheme "first" asks it).
    std::uint32_t originalStart() const { return empty() ? m_base : alignment(0).start; }

    /// Copy of normalized bytes [begin, end) with their alignments.
    NormalizedString slice(std::size_t begin, std::size_t end) const;

    /// Builds a new NormalizedString piece by piece; every appended byte carries an original span.
    class Builder {
    public:
        explicit Builder(std::size_t reserve = 0) {
            m_text.reserve(reserve);
            m_align.reserve(reserve);
        }
        /// Appends bytes that all stem from `origin`.
        void append(std::string_view bytes, Span origin) {
            m_text.append(bytes);
            // Appends are a few bytes at a time (one character); a plain loop beats vector::insert.
            for (std::size_t k = 0; k < bytes.size(); ++k) {
                m_align.push_back(origin);
            }
        }
        /// Appends bytes [begin, end) of source with their own alignments.
        void appendFrom(const NormalizedString& source, std::size_t begin, std::size_t end);
        NormalizedString finish() &&;

    private:
        std::string m_text;
        std::vector<Span> m_align;
    };

    /// Replaces every occurrence of the literal `pattern` by `content`; replaced bytes align with the
    /// original span of the occurrence.
    NormalizedString replaceLiteral(std::string_view pattern, std::string_view content) const;
    /// `prefix` + text; the prefix aligns with the first character (as Hugging Face's prepend does).
    NormalizedString prepend(std::string_view prefix) const;

private:
    std::string m_text;
    std::vector<Span> m_align; // empty: identity from m_base
    std::uint32_t m_base = 0;
};

} // namespace kvscope::tokenizer
