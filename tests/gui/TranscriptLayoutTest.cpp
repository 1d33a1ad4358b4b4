// SPDX-License-Identifier: GPL-3.0-or-later
// TranscriptLayout: tokens wrapped like prose into lines, from tables of widths and break flags.
#include "kvscope/gui/geometry/TranscriptLayout.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kvscope::gui {
namespace {

/// A token of `width` pixels; 'w' a word start, 'c' a word's continuation, 'p' a paragraph, 'n' a line end.
TranscriptToken layoutToken(float width, char kind) {
    TranscriptToken made;
    made.width = width;
    made.wordStart = kind != 'c';
    made.paragraph = kind == 'p';
    made.lineEnd = kind == 'n';
    return made;
}

std::vector<TranscriptToken> layoutTokens(const std::vector<std::pair<float, char>>& table) {
    std::vector<TranscriptToken> out;
    for (const auto& [width, kind] : table) {
        out.push_back(layoutToken(width, kind));
    }
    return out;
}

TEST(TranscriptLayoutTest, WrapsBetweenWordsParagraphsAndNewlines) {
    struct Case {
        std::string name;
        std::vector<std::pair<float, char>> tokens;
        float width;
        std::vector<std::uint32_t> starts;
        std::vector<float> x;
    };
    const std::vector<Case> cases = {
        {"empty", {}, 100, {}, {}},
        {"one line", {{10, 'w'}, {20, 'w'}, {30, 'w'}}, 100, {0}, {0, 10, 30}},
        {"exactly full", {{50, 'w'}, {50, 'w'}}, 100, {0}, {0, 50}},
        {"wraps before the word that overflows", {{40, 'w'}, {40, 'w'}, {40, 'w'}}, 100, {0, 2}, {0, 40, 0}},
        // " under" "stand" does not fit after 60 px: the whole word moves, not "stand" alone.
        {"keeps a word's tokens together", {{60, 'w'}, {30, 'w'}, {30, 'c'}}, 100, {0, 1}, {0, 0, 30}},
        // A word wider than the line breaks between its tokens.
        {"breaks a long word", {{60, 'w'}, {60, 'c'}, {60, 'c'}}, 100, {0, 1, 2}, {0, 0, 0}},
        // A token wider than the line stands alone.
        {"a token wider than the line", {{10, 'w'}, {150, 'w'}, {10, 'w'}}, 100, {0, 1, 2}, {0, 0, 0}},
        {"newline ends the line", {{10, 'w'}, {10, 'n'}, {10, 'w'}}, 100, {0, 2}, {0, 10, 0}},
        {"trailing newline makes no empty line", {{10, 'w'}, {10, 'n'}}, 100, {0}, {0, 10}},
        // A turn opens a paragraph: a blank line, then the turn on a line of its own.
        {"paragraph after text", {{10, 'w'}, {10, 'p'}, {10, 'w'}}, 100, {0, 1, 1}, {0, 0, 10}},
        {"paragraph after a newline", {{10, 'n'}, {10, 'p'}}, 100, {0, 1, 1}, {0, 0}},
        {"paragraph first", {{10, 'p'}, {10, 'w'}}, 100, {0}, {0, 10}},
        {"zero width", {{10, 'w'}}, 0, {0}, {0}},
    };
    for (const Case& test : cases) {
        const std::vector<TranscriptToken> laidOut = layoutTokens(test.tokens);
        const TranscriptLines lines = TranscriptLayout::wrap(laidOut, test.width);
        EXPECT_EQ(lines.starts, test.starts) << test.name;
        EXPECT_EQ(lines.x, test.x) << test.name;
    }
}

TEST(TranscriptLayoutTest, FindsTokensLinesAndVisibleRange) {
    // Lines: [0, 1] | [2] | blank | [3]
    const std::vector<TranscriptToken> laidOut = layoutTokens({{40, 'w'}, {40, 'w'}, {40, 'w'}, {40, 'p'}});
    const TranscriptLines lines = TranscriptLayout::wrap(laidOut, 100);
    ASSERT_EQ(lines.starts, (std::vector<std::uint32_t>{0, 2, 3, 3}));
    struct Hit {
        double x, y;
        std::optional<std::size_t> token;
    };
    const std::vector<Hit> hits = {
        {0, 0, 0},     {39.9, 5, 0},  {40, 5, 1},    {79.9, 19.9, 1}, {80, 5, std::nullopt}, {5, 20, 2},
        {5, 45, std::nullopt},        {5, 61, 3},    {-1, 5, std::nullopt}, {5, -1, std::nullopt},
        {5, 80, std::nullopt},
    };
    for (const Hit& hit : hits) {
        EXPECT_EQ(TranscriptLayout::tokenAt(lines, laidOut, hit.x, hit.y, 20), hit.token) << hit.x << "," << hit.y;
    }
    const std::vector<std::pair<std::size_t, std::optional<std::size_t>>> lineOf = {
        {0, 0}, {1, 0}, {2, 1}, {3, 3}, {4, std::nullopt}};
    for (const auto& [index, line] : lineOf) {
        EXPECT_EQ(TranscriptLayout::lineOf(lines, index), line) << index;
    }
    struct Range {
        double top, height;
        std::pair<std::size_t, std::size_t> lines;
    };
    const std::vector<Range> ranges = {
        {0, 40, {0, 2}}, {10, 20, {0, 2}}, {20, 20, {1, 2}}, {0, 1000, {0, 4}}, {500, 40, {4, 4}}, {-30, 40, {0, 1}},
    };
    for (const Range& range : ranges) {
        EXPECT_EQ(TranscriptLayout::visibleLines(lines, range.top, range.height, 20), range.lines) << range.top;
    }
    EXPECT_EQ(lines.tokensOf(2), (std::pair<std::size_t, std::size_t>{3, 3}));
}

} // namespace
} // namespace kvscope::gui
