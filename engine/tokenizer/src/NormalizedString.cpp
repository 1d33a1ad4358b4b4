// SPDX-License-Identifier: GPL-3.0-or-later
#include "NormalizedString.h"

#include "Unicode.h"

namespace kvscope::tokenizer {

Span NormalizedString::originalSpan(std::size_t begin, std::size_t end) const {
    if (begin >= end) {
        if (m_text.empty()) {
            return {m_base, m_base};
        }
        const Span at = begin < m_text.size() ? alignment(begin) : alignment(m_text.size() - 1);
        const std::uint32_t point = begin < m_text.size() ? at.start : at.end;
        return {point, point};
    }
    return {alignment(begin).start, alignment(end - 1).end};
}

NormalizedString NormalizedString::slice(std::size_t begin, std::size_t end) const {
    NormalizedString out;
    out.m_text.assign(m_text, begin, end - begin);
    if (m_align.empty()) {
        out.m_base = m_base + static_cast<std::uint32_t>(begin);
    } else {
        out.m_align.assign(m_align.begin() + static_cast<std::ptrdiff_t>(begin),
                           m_align.begin() + static_cast<std::ptrdiff_t>(end));
        out.m_base = begin < m_text.size() ? m_align[begin].start : (m_text.empty() ? m_base : m_align.back().end);
    }
    return out;
}

void NormalizedString::Builder::appendFrom(const NormalizedString& source, std::size_t begin, std::size_t end) {
    m_text.append(source.m_text, begin, end - begin);
    if (source.m_align.empty()) {
        for (std::size_t i = begin; i < end; ++i) {
            m_align.push_back(source.alignment(i));
        }
    } else {
        m_align.insert(m_align.end(), source.m_align.begin() + static_cast<std::ptrdiff_t>(begin),
                       source.m_align.begin() + static_cast<std::ptrdiff_t>(end));
    }
}

NormalizedString NormalizedString::Builder::finish() && {
    NormalizedString out;
    out.m_base = m_align.empty() ? 0 : m_align.front().start;
    out.m_text = std::move(m_text);
    out.m_align = std::move(m_align);
    return out;
}

NormalizedString NormalizedString::replaceLiteral(std::string_view pattern, std::string_view content) const {
    if (pattern.empty() || m_text.find(pattern) == std::string::npos) {
        return *this;
    }
    Builder builder(m_text.size() + 8);
    std::size_t position = 0;
    while (true) {
        const std::size_t found = m_text.find(pattern, position);
        if (found == std::string::npos) {
            break;
        }
        builder.appendFrom(*this, position, found);
        builder.append(content, originalSpan(found, found + pattern.size()));
        position = found + pattern.size();
    }
    builder.appendFrom(*this, position, m_text.size());
    NormalizedString out = std::move(builder).finish();
    out.m_base = m_base;
    return out;
}

NormalizedString NormalizedString::prepend(std::string_view prefix) const {
    if (m_text.empty()) {
        return *this;
    }
    Builder builder(m_text.size() + prefix.size());
    const std::size_t firstLength = Unicode::sequenceLength(static_cast<unsigned char>(m_text[0]));
    builder.append(prefix, originalSpan(0, firstLength));
    builder.appendFrom(*this, 0, m_text.size());
    return std::move(builder).finish();
}

} // namespace kvscope::tokenizer
