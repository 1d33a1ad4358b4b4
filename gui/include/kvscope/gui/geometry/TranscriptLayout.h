// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace kvscope::gui {

/// One token as the transcript lays it out: its box's width and where lines may or must break around it.
struct TranscriptToken {
    float width = 0.0F;
    /// The line may wrap before it (it starts a word: white space first, a special token, or after one).
    bool wordStart = true;
    /// It opens a paragraph (a chat turn): a new line, after a blank one.
    bool paragraph = false;
    /// Its text ends a line (it holds a newline): the next token starts a new line.
    bool lineEnd = false;
    bool operator==(const TranscriptToken&) const = default;
};

/// Tokens wrapped into lines: line i holds tokens [starts[i], starts[i + 1]) (the last line up to the token
/// count); a blank line (between paragraphs) holds none. x[t] is token t's left edge in its line.
struct TranscriptLines {
    std::vector<std::uint32_t> starts;
    std::vector<float> x;
    std::size_t lineCount() const { return starts.size(); }
    /// Tokens [first, end) of line `line`.
    std::pair<std::size_t, std::size_t> tokensOf(std::size_t line) const;
    bool operator==(const TranscriptLines&) const = default;
};

/// Pure geometry of the transcript: tokens wrapped like prose into lines of one height, so that a
/// 131072-token session is laid out by arithmetic on widths (no text layout) and only the lines in view are
/// painted. Lines wrap between words (a word is the tokens from one wordStart to the next); a word wider than
/// the line breaks between its tokens, and a token wider than the line stands alone on its line.
class TranscriptLayout {
public:
    /// The lines of `tokens` wrapped into `width` pixels.
    static TranscriptLines wrap(std::span<const TranscriptToken> tokens, float width);
    /// The lines [first, last) that a view `height` pixels tall shows from `top` (pixels from the first line).
    static std::pair<std::size_t, std::size_t> visibleLines(const TranscriptLines& lines, double top, double height,
                                                            double lineHeight);
    /// The token at (x, y) from the top left of the first line; nullopt over a blank line, past a line's end
    /// or outside the lines.
    static std::optional<std::size_t> tokenAt(const TranscriptLines& lines, std::span<const TranscriptToken> tokens,
                                              double x, double y, double lineHeight);
    /// The line holding token `token` (binary search over the starts); nullopt past the last token.
    static std::optional<std::size_t> lineOf(const TranscriptLines& lines, std::size_t token);
};

} // namespace kvscope::gui
