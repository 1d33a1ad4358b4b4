// SPDX-License-Identifier: GPL-3.0-or-later
// TranscriptView: the session's text coloured by what the cache holds of each token (the literal session of
// FateTestSession.h), its click and hover, following the step, and a long session painted by its visible lines.
#include "kvscope/gui/views/TranscriptView.h"

#include "FateTestSession.h"
#include "GuiTestHelpers.h"
#include "kvscope/gui/models/SessionTokens.h"
#include "kvscope/gui/session/ViewSelection.h"
#include "kvscope/gui/views/PlotStyle.h"

#include <QImage>
#include <QScrollBar>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

namespace kvscope::gui {
namespace {

using F = TokenFate;

/// A transcript 600 x 300 over a session of its own.
class TranscriptViewTest : public ::testing::Test {
protected:
    TranscriptViewTest() { view.resize(600, 300); }
    /// The literal session of FateTestSession.h.
    void loadFateSession(bool maskingPress = false) {
        session.setRecordedSession(testing::fateMetadata(), testing::fateEvents(maskingPress), QStringLiteral("literal"));
    }
    SessionController session{testing::syntheticFactory()};
    ViewSelection selection;
    TranscriptView view{session, selection};
};

/// The colours painted at a token's box, inside its fill but clear of its text (its top and bottom left corners),
/// as "#rrggbb".
std::pair<std::string, std::string> paintedAt(TranscriptView& view, std::int64_t position) {
    const QImage image = view.grab().toImage();
    const QRect box = view.tokenRect(position);
    return {image.pixelColor(box.left() + 1, box.top() + 2).name().toStdString(),
            image.pixelColor(box.left() + 1, box.bottom() - 2).name().toStdString()};
}

std::string colourName(const QColor& colour) { return colour.name().toStdString(); }

TEST_F(TranscriptViewTest, TokensAreColouredByWhatTheCacheHoldsOfThem) {
    loadFateSession();
    ASSERT_EQ(view.tokenCount(), 8) << "6 prompt tokens and the token of each of the 2 steps";
    struct Case {
        std::int64_t step;
        int layer; ///< -1: the summary over the layers
        std::vector<std::pair<TokenFate, bool>> positions; ///< 0 .. 7: the fate and whether of some layers only
    };
    const auto all = [](TokenFate fate) { return std::pair{fate, false}; };
    const auto some = [](TokenFate fate) { return std::pair{fate, true}; };
    const std::vector<Case> cases = {
        // The summary shows the most severe fate, lighter where only some layers gave it.
        {1, -1, {some(F::SlidOut), some(F::PartlyDropped), some(F::PartlyDropped), some(F::Masked),
                 some(F::Dropped), some(F::Offloaded), some(F::Offloaded), all(F::Absent)}},
        {0, -1, {some(F::SlidOut), some(F::PartlyDropped), some(F::PartlyDropped), some(F::Masked),
                 some(F::Dropped), all(F::Kept), all(F::Absent), all(F::Absent)}},
        {1, 1, {all(F::SlidOut), all(F::SlidOut), all(F::SlidOut), all(F::Kept), all(F::Kept), all(F::Kept),
                all(F::Kept), all(F::Absent)}},
        {1, 3, {all(F::Kept), all(F::PartlyDropped), all(F::PartlyDropped), all(F::Kept), all(F::Dropped),
                all(F::Kept), all(F::Kept), all(F::Absent)}},
        {0, 0, {all(F::Masked), all(F::Masked), all(F::Masked), all(F::Masked), all(F::Kept), all(F::Kept),
                all(F::Absent), all(F::Absent)}},
    };
    for (const Case& test : cases) {
        session.setCurrentStep(test.step);
        view.setFollowLayer(test.layer >= 0);
        selection.setSelectedLayer(test.layer);
        EXPECT_EQ(view.shownLayer(), test.layer);
        for (std::size_t position = 0; position < test.positions.size(); ++position) {
            const auto [fate, partial] = test.positions[position];
            const auto at = static_cast<std::int64_t>(position);
            const std::string where = "step " + std::to_string(test.step) + ", layer " + std::to_string(test.layer) +
                                      ", position " + std::to_string(position);
            EXPECT_EQ(view.fateOf(at), fate) << where;
            EXPECT_EQ(view.someLayersOnly(at), partial) << where;
            if (fate != F::Absent) {
                // A fate of some layers only fills the lower half, the kept colour above it.
                EXPECT_EQ(paintedAt(view, at),
                          std::pair(colourName(PlotStyle::fateColour(partial ? F::Kept : fate)),
                                    colourName(PlotStyle::fateColour(fate))))
                    << where;
            }
        }
    }
}

TEST_F(TranscriptViewTest, TheGeneratedTokenIsMarkedAndTheTextFollowsTheStep) {
    loadFateSession();
    session.setCurrentStep(0);
    // Step 0 generates " It" (position 6): outlined in the cursor's colour, not in the cache yet.
    EXPECT_EQ(view.fateOf(6), F::Absent);
    const QRect generated = view.tokenRect(6);
    EXPECT_EQ(view.grab().toImage().pixelColor(generated.left() + 1, generated.center().y()).name(),
              PlotStyle::cursorColour().name());
    EXPECT_TRUE(view.describe(6).contains(QStringLiteral("Step 0 generates it"))) << view.describe(6).toStdString();
    EXPECT_TRUE(view.describe(7).contains(QStringLiteral("Not generated yet"))) << view.describe(7).toStdString();
    session.setCurrentStep(1);
    EXPECT_EQ(view.fateOf(6), F::Offloaded) << "fed at step 1, it is in the cache";
    EXPECT_NE(view.grab().toImage().pixelColor(generated.left() + 1, generated.center().y()).name(),
              PlotStyle::cursorColour().name());
}

TEST_F(TranscriptViewTest, ClickingATokenSelectsItsPosition) {
    loadFateSession();
    QSignalSpy selected(&selection, &ViewSelection::positionSelected);
    QTest::mouseClick(&view, Qt::LeftButton, {}, view.tokenRect(4).center());
    EXPECT_EQ(selection.selectedPosition(), 4);
    ASSERT_EQ(selected.count(), 1);
    EXPECT_EQ(selected.front().front().toLongLong(), 4);
    // Outside every token: the selection stays.
    QTest::mouseClick(&view, Qt::LeftButton, {}, QPoint(view.width() - 30, view.height() - 5));
    EXPECT_EQ(selection.selectedPosition(), 4);
    EXPECT_EQ(view.positionAt(QPoint(view.width() - 30, view.height() - 5)), -1);
}

TEST_F(TranscriptViewTest, HoveringNamesTheTokenAndWhatHappenedToItWhen) {
    loadFateSession();
    session.setCurrentStep(1);
    const QString summary = view.toolTipAt(view.tokenRect(4).center());
    EXPECT_EQ(summary.toStdString(), "\u201c cache\u201d, position 4, in the prompt\n"
                                     "At step 1, over 4 layers:\n"
                                     "  dropped by the press in 1 layer since step 0\n"
                                     "  offloaded to host in 1 layer since step 1\n"
                                     "  kept in 2 layers");
    const QString generated = view.toolTipAt(view.tokenRect(6).center());
    EXPECT_TRUE(generated.startsWith(QStringLiteral("\u201c It\u201d, position 6, token id 42, generated at step 0")))
        << generated.toStdString();
    view.setFollowLayer(true);
    selection.setSelectedLayer(3);
    EXPECT_EQ(view.describe(1).section(QLatin1Char('\n'), 1).toStdString(),
              "At step 1, layer 3: dropped by the press from some KV heads (1 of 2 KV heads) since step 0");
    selection.setSelectedLayer(1);
    EXPECT_EQ(view.describe(2).section(QLatin1Char('\n'), 1).toStdString(),
              "At step 1, layer 1: slid out of the window since step 1");
    EXPECT_TRUE(view.describe(0).startsWith(QStringLiteral("\u201c<|im_start|>\u201d (special token), position 0")))
        << view.describe(0).toStdString();
    EXPECT_TRUE(view.toolTipAt(QPoint(view.width() - 30, view.height() - 5)).isEmpty());
}

TEST_F(TranscriptViewTest, AMaskingPressMasks) {
    loadFateSession(true);
    session.setCurrentStep(1);
    view.setFollowLayer(true);
    selection.setSelectedLayer(3);
    EXPECT_EQ(view.fateOf(4), F::Masked);
    EXPECT_EQ(paintedAt(view, 4).first, colourName(PlotStyle::fateColour(F::Masked)));
    EXPECT_TRUE(view.describe(4).contains(QStringLiteral("masked (held, hidden from attention) (2 of 2 KV heads)")))
        << view.describe(4).toStdString();
}

TEST_F(TranscriptViewTest, TurnsOpenParagraphsAndNewlinesEndLines) {
    trace::SessionMetadata metadata = testing::fateMetadata();
    metadata.promptPieces = {"<|im_start|>", "user", "\n", "Why", "?", "<|im_end|>", "\n", "<|im_start|>", "assistant", "\n"};
    session.setRecordedSession(metadata, {}, QStringLiteral("chat"));
    // <|im_start|>user↵ | Why?<|im_end|>↵ | blank | <|im_start|>assistant↵
    EXPECT_EQ(view.lineCount(), 4U);
    const auto lineTop = [&](std::int64_t position) { return view.tokenRect(position).top(); };
    EXPECT_EQ(lineTop(1), lineTop(0));
    EXPECT_GT(lineTop(3), lineTop(2)) << "a newline ends the line";
    EXPECT_EQ(lineTop(5), lineTop(3));
    EXPECT_EQ(lineTop(7) - lineTop(3), 2 * (lineTop(3) - lineTop(0))) << "a blank line before the next turn";
    EXPECT_TRUE(view.describe(5).contains(QStringLiteral("(special token)")));
    EXPECT_FALSE(view.describe(4).contains(QStringLiteral("(special token)")));
}

TEST_F(TranscriptViewTest, ALongSessionPaintsTheLinesInViewAndScrollsToTheStep) {
    view.resize(400, 300);
    testing::loadSynthetic(session, testing::smallSession(3000));
    // The steps' tokens are read in slices of a few milliseconds between the event loop's other work.
    ASSERT_TRUE(testing::waitUntil([&] { return !view.readingText(); }));
    EXPECT_EQ(view.tokenCount(), 12 + 3001);
    view.grab();
    const auto [first, last] = view.paintedLines();
    EXPECT_GT(view.lineCount(), 200U);
    EXPECT_LT(last - first, 30U) << "only the lines in view are painted";
    // The last step's token is scrolled into view, and with it the lines painted.
    session.goToEnd();
    EXPECT_FALSE(view.tokenRect(view.tokenCount() - 1).isEmpty());
    EXPECT_GT(view.scrollBar()->value(), 0);
    view.grab();
    EXPECT_GT(view.paintedLines().first, first);
    // A position selected elsewhere is scrolled to.
    selection.setSelectedPosition(100);
    EXPECT_FALSE(view.tokenRect(100).isEmpty());
}

TEST_F(TranscriptViewTest, AFileBackedSessionsTextFillsInOverTheEventLoop) {
    QTemporaryDir folder;
    const QString path = folder.filePath(QStringLiteral("long.kvsess"));
    const auto options = testing::smallSession(4000);
    synthetic::SyntheticSession::write(options, path.toStdString());
    ASSERT_EQ(session.openFile(path), QString());
    // Opened at once; the steps' tokens (each step's frame decoded) are read slice by slice.
    ASSERT_TRUE(testing::waitUntil([&] { return !view.readingText(); }));
    EXPECT_EQ(view.tokenCount(), options.promptTokens + session.stepCount());
    const std::int64_t last = view.tokenCount() - 1;
    const std::optional<std::string> piece = SessionTokens::pieceAt(session.metadata(), session.timeline(), last);
    ASSERT_TRUE(piece.has_value());
    EXPECT_TRUE(view.describe(last).contains(QString::fromStdString(*piece))) << view.describe(last).toStdString();
}

TEST_F(TranscriptViewTest, ALiveSessionGrowsItsTranscript) {
    view.resize(400, 300);
    config::RunSettings settings;
    settings.tokens = 20;
    session.startLive(settings, SessionController::Generation::ToTheEnd);
    ASSERT_TRUE(testing::waitUntil([&] { return session.liveFinished(); }));
    session.waitForEngine();
    QCoreApplication::processEvents();
    ASSERT_GT(session.metadata().promptPieces.size(), 0U);
    ASSERT_TRUE(testing::waitUntil([&] { return !view.readingText(); }));
    EXPECT_EQ(view.tokenCount(), static_cast<std::int64_t>(session.metadata().promptPieces.size()) + session.stepCount());
}

TEST_F(TranscriptViewTest, MarksWhereItPartsFromAnotherTranscript) {
    loadFateSession();
    const QImage unmarked = view.grab().toImage();
    view.setPartingPosition(7);
    EXPECT_EQ(view.partingPosition(), 7);
    const QImage marked = view.grab().toImage();
    const QRect parting = view.tokenRect(7);
    EXPECT_NE(marked.pixelColor(parting.center().x(), parting.bottom() - 1),
              unmarked.pixelColor(parting.center().x(), parting.bottom() - 1));
    // Tokens before it are unmarked.
    const QRect before = view.tokenRect(3);
    EXPECT_EQ(marked.copy(before), unmarked.copy(before));
}

} // namespace
} // namespace kvscope::gui

namespace kvscope::gui {
namespace {

TEST_F(TranscriptViewTest, ASpeculativeSessionMarksAcceptedAndRolledBackDrafts) {
    const testing::SpeculativeSession speculative = testing::speculativeSession();
    session.setRecordedSession(speculative.metadata, speculative.events, QStringLiteral("speculative"));
    ASSERT_EQ(view.tokenCount(), 13) << "5 prompt tokens, then 2 + 1 + 4 + 1 the steps added";
    session.setCurrentStep(3);
    struct Case {
        std::int64_t position;
        const char* shown;
        const char* line; ///< what hovering says after the first line ("" for nothing on drafts)
    };
    const Case cases[] = {
        {5, "\u201c x\u201d, position 5, token id 10, generated at step 0",
         "Drafted by prompt lookup at step 0 and accepted: the step wrote it into every layer with its drafts and "
         "kept it after verifying them."},
        {6, "\u201c z\u201d, position 6, token id 12, generated at step 0",
         "At step 0 prompt lookup drafted \u201c y\u201d here (positions 6 to 6); the model chose this token instead, "
         "and the 1 rejected draft(s) were rolled back from every layer."},
        {7, "\u201c w\u201d, position 7, token id 13, generated at step 1", ""},
        {10, "\u201c r\u201d, position 10, token id 16, generated at step 2",
         "Drafted by prompt lookup at step 2 and accepted: the step wrote it into every layer with its drafts and "
         "kept it after verifying them."},
        {11, "\u201c s\u201d, position 11, token id 17, generated at step 2", ""},
        {12, "\u201c t\u201d, position 12, token id 18, generated at step 3", ""},
    };
    for (const Case& c : cases) {
        const QStringList lines = view.describe(c.position).split(QLatin1Char('\n'));
        EXPECT_EQ(lines.front().toStdString(), c.shown);
        std::string draft;
        for (const QString& line : lines) {
            if (line.startsWith(QStringLiteral("Drafted by")) || line.contains(QStringLiteral(" drafted "))) {
                draft = line.toStdString();
            }
        }
        EXPECT_EQ(draft, c.line)
            << "position " << c.position;
    }
    // The step's own token is outlined at the position after its accepted drafts; marks show in the paint.
    session.setCurrentStep(0);
    EXPECT_EQ(view.describe(6).split(QLatin1Char('\n')).at(2).toStdString(),
              "Step 0 generates it: it enters the cache at the next step.");
    session.setCurrentStep(2);
    const QImage image = view.grab().toImage();
    const QRect accepted = view.tokenRect(8);
    const QRect replaced = view.tokenRect(6);
    EXPECT_EQ(image.pixelColor(replaced.left() + 1, replaced.center().y()).name().toStdString(), "#c21878")
        << "the rolled-back drafts' bar";
    bool underlined = false;
    for (int x = accepted.left() + 1; x < accepted.right(); ++x) {
        underlined = underlined || image.pixelColor(x, accepted.bottom() - 2).name() == QStringLiteral("#00897b");
    }
    EXPECT_TRUE(underlined) << "an accepted draft's underline";
}

} // namespace
} // namespace kvscope::gui
