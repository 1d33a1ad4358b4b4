// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/geometry/TranscriptLayout.h"

#include <algorithm>
#include <cmath>

namespace kvscope::gui {

std::pair<std::size_t, std::size_t> TranscriptLines::tokensOf(std::size_t line) const {
    if (line >= starts.size()) {
        return {x.size(), x.size()};
    }
    const std::size_t end = line + 1 < starts.size() ? starts[line + 1] : x.size();
    return {starts[line], end};
}

TranscriptLines TranscriptLayout::wrap(std::span<const TranscriptToken> tokens, float width) {
    TranscriptLines lines;
    lines.x.resize(tokens.size());
    if (tokens.empty()) {
        return lines;
    }
    lines.starts.push_back(0);
    std::size_t lineFirst = 0;
    std::size_t wordFirst = 0;
    float x = 0.0F;
    const auto newLine = [&](std::size_t first) {
        lines.starts.push_back(static_cast<std::uint32_t>(first));
        lineFirst = first;
    };
    for (std::size_t index = 0; index < tokens.size(); ++index) {
        const TranscriptToken& token = tokens[index];
        if (token.paragraph && index > 0) {
            if (lineFirst < index) {
                newLine(index);
            }
            newLine(index); // the blank line between paragraphs
            x = 0.0F;
        }
        if (token.wordStart || index == lineFirst) {
            wordFirst = index;
        }
        if (x + token.width > width && index > lineFirst) {
            // Wrap before the word this token belongs to; a word filling the line wraps before the token.
            const std::size_t first = wordFirst > lineFirst ? wordFirst : index;
            const float shift = first < index ? lines.x[first] : x;
            for (std::size_t moved = first; moved < index; ++moved) {
                lines.x[moved] -= shift;
            }
            x -= shift;
            newLine(first);
            wordFirst = first;
        }
        lines.x[index] = x;
        x += token.width;
        if (token.lineEnd && index + 1 < tokens.size()) {
            newLine(index + 1);
            x = 0.0F;
        }
    }
    return lines;
}

std::pair<std::size_t, std::size_t> TranscriptLayout::visibleLines(const TranscriptLines& lines, double top,
                                                                   double height, double lineHeight) {
    if (lineHeight <= 0 || lines.lineCount() == 0) {
        return {0, 0};
    }
    const auto clampLine = [&](double line) {
        return static_cast<std::size_t>(std::clamp(line, 0.0, static_cast<double>(lines.lineCount())));
    };
    return {clampLine(std::floor(top / lineHeight)), clampLine(std::ceil((top + height) / lineHeight))};
}

std::optional<std::size_t> TranscriptLayout::tokenAt(const TranscriptLines& lines,
                                                     std::span<const TranscriptToken> tokens, double x, double y,
                                                     double lineHeight) {
    if (lineHeight <= 0 || y < 0 || x < 0) {
        return std::nullopt;
    }
    const auto line = static_cast<std::size_t>(y / lineHeight);
    if (line >= lines.lineCount()) {
        return std::nullopt;
    }
    const auto [first, end] = lines.tokensOf(line);
    // The last token of the line whose left edge is at or before x.
    const auto after = std::upper_bound(lines.x.begin() + static_cast<std::ptrdiff_t>(first),
                                        lines.x.begin() + static_cast<std::ptrdiff_t>(end), static_cast<float>(x));
    if (after == lines.x.begin() + static_cast<std::ptrdiff_t>(first)) {
        return std::nullopt;
    }
    const auto token = static_cast<std::size_t>(after - lines.x.begin()) - 1;
    return x < lines.x[token] + tokens[token].width ? std::optional(token) : std::nullopt;
}

std::optional<std::size_t> TranscriptLayout::lineOf(const TranscriptLines& lines, std::size_t token) {
    if (token >= lines.x.size()) {
        return std::nullopt;
    }
    // The last line starting at or before the token (blank lines start where the next line does).
    const auto after = std::upper_bound(lines.starts.begin(), lines.starts.end(), static_cast<std::uint32_t>(token));
    return static_cast<std::size_t>(after - lines.starts.begin()) - 1;
}

} // namespace kvscope::gui
