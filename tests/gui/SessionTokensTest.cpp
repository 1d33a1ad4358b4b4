// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/models/SessionTokens.h"

#include "GuiTestHelpers.h"

#include <gtest/gtest.h>

namespace kvscope::gui {
namespace {

trace::Event stepEndInSessionTokens(std::int64_t step, std::string text) {
    return trace::Event{step, -1, 0, trace::StepEndEvent{7, std::move(text), 1000}};
}

TEST(SessionTokensTest, PromptPiecesThenTheTokenEachStepProduced) {
    trace::SessionMetadata metadata;
    metadata.promptPieces = {"<bos>", "The", " cache"};
    trace::Timeline timeline;
    timeline.emit(trace::Event{0, -1, 0, trace::StepBeginEvent{-1, "The cache"}});
    timeline.emit(stepEndInSessionTokens(0, " is"));
    timeline.emit(trace::Event{1, -1, 0, trace::StepBeginEvent{7, " is"}});
    timeline.emit(stepEndInSessionTokens(1, " a"));
    struct Case {
        std::int64_t position;
        std::optional<std::string> piece;
    };
    const Case cases[] = {{-1, std::nullopt}, {0, "<bos>"}, {1, "The"},       {2, " cache"},
                          {3, " is"},         {4, " a"},    {5, std::nullopt}};
    for (const Case& c : cases) {
        EXPECT_EQ(SessionTokens::pieceAt(metadata, timeline, c.position), c.piece) << "position " << c.position;
    }
    EXPECT_EQ(SessionTokens::producedPosition(metadata, 0), 3) << "the prefill's token follows the prompt";
    EXPECT_EQ(SessionTokens::producedPosition(metadata, 1), 4);
}

TEST(SessionTokensTest, SessionsWithoutPromptPiecesNameNothing) {
    trace::Timeline timeline;
    timeline.emit(stepEndInSessionTokens(0, " is"));
    EXPECT_EQ(SessionTokens::pieceAt(trace::SessionMetadata{}, timeline, 0), std::nullopt);
    EXPECT_EQ(SessionTokens::producedPosition(trace::SessionMetadata{}, 0), -1);
}

TEST(SessionTokensTest, WhiteSpaceIsMadeVisible) {
    EXPECT_EQ(SessionTokens::visible(" a\n\tb"), "\u00b7a\u21b5\u2192b");
    EXPECT_EQ(SessionTokens::visible("word"), "word");
    EXPECT_EQ(SessionTokens::visible(""), "");
}


TEST(SessionTokensTest, ProducedTokensFromAStepOn) {
    trace::Timeline timeline;
    timeline.emit(stepEndInSessionTokens(0, " is"));
    timeline.emit(trace::Event{1, -1, 0, trace::StepBeginEvent{7, " is"}});
    timeline.emit(trace::Event{2, -1, 0, trace::StepEndEvent{9, " it", 1000}});
    EXPECT_EQ(SessionTokens::producedTokens(timeline),
              (std::vector<ProducedToken>{{7, " is"}, {-1, ""}, {9, " it"}}));
    EXPECT_EQ(SessionTokens::producedTokens(timeline, 2), (std::vector<ProducedToken>{{9, " it"}}));
    EXPECT_TRUE(SessionTokens::producedTokens(timeline, 3).empty());
    EXPECT_EQ(SessionTokens::producedTokens(timeline, 1, 2), (std::vector<ProducedToken>{{-1, ""}}));
    EXPECT_EQ(SessionTokens::producedTokens(timeline, 0, 9).size(), 3U) << "clamped to the step count";
    EXPECT_TRUE(SessionTokens::producedTokens(timeline, 2, 1).empty());
    EXPECT_EQ(SessionTokens::producedPieces(timeline), (std::vector<std::string>{" is", "", " it"}));
}

TEST(SessionTokensTest, SpecialTokensAndTurns) {
    struct Case {
        std::string piece;
        bool special;
        bool turn;
    };
    const std::vector<Case> cases = {
        {"<|im_start|>", true, true},      {"<|im_end|>", true, false},     {"<start_of_turn>", true, true},
        {"<end_of_turn>", true, false},    {"<bos>", true, false},          {"</s>", true, false},
        {"<|start_header_id|>", true, true}, {"[INST]", true, true},        {"[/INST]", true, false},
        {"<|user|>", true, true},          {"<b>", false, false},           {"<div>", false, false},
        {"<", false, false},               {"<>", false, false},            {" <bos>", false, false},
        {"<a b>", false, false},           {"Hello", false, false},         {"<|a b|>", false, false},
    };
    for (const Case& test : cases) {
        EXPECT_EQ(SessionTokens::isSpecial(test.piece), test.special) << test.piece;
        EXPECT_EQ(SessionTokens::opensTurn(test.piece), test.turn) << test.piece;
    }
}

TEST(SessionTokensTest, ASpeculativeStepAddsItsAcceptedDraftsBeforeItsOwnToken) {
    const testing::SpeculativeSession session = testing::speculativeSession();
    trace::Timeline timeline;
    timeline.emitAll(session.events);
    SpeculationHistory speculation;
    speculation.update(timeline);
    const std::pair<std::int64_t, std::optional<std::string>> pieces[] = {
        {4, " b"}, {5, " x"}, {6, " z"}, {7, " w"}, {8, " p"}, {10, " r"}, {11, " s"}, {12, " t"}, {13, std::nullopt}};
    for (const auto& [position, piece] : pieces) {
        EXPECT_EQ(SessionTokens::pieceAt(session.metadata, timeline, position, &speculation), piece)
            << "position " << position;
    }
    EXPECT_EQ(SessionTokens::producedTokens(timeline, 0, -1, &speculation),
              (std::vector<ProducedToken>{{10, " x"}, {12, " z"}, {13, " w"}, {14, " p"}, {15, " q"}, {16, " r"},
                                          {17, " s"}, {18, " t"}}));
    EXPECT_EQ(SessionTokens::producedTokens(timeline, 2, 3, &speculation),
              (std::vector<ProducedToken>{{14, " p"}, {15, " q"}, {16, " r"}, {17, " s"}}));
    EXPECT_EQ(SessionTokens::producedPosition(session.metadata, 2, &speculation), 11);
    // Read as one token per step, the same session misplaces every token after the first accepted draft.
    EXPECT_EQ(SessionTokens::pieceAt(session.metadata, timeline, 6), " w");
}

} // namespace
} // namespace kvscope::gui
