// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/views/BlockTableView.h"

#include "GuiTestHelpers.h"
#include "PagedTestSessions.h"
#include "kvscope/gui/session/ViewSelection.h"
#include "kvscope/gui/views/PlotStyle.h"

namespace kvscope::gui {
namespace {

TEST(BlockTableViewTest, TheSelectedRequestsTableOverItsPositions) {
    SessionController session;
    ViewSelection selection;
    BlockTableView view(session, selection);
    view.resize(800, 110);
    EXPECT_EQ(view.headline(), "Not a serving session");
    session.setRecordedSession({}, testing::designExample(), "example");
    session.setCurrentStep(2);
    // No selection: the first running request.
    EXPECT_EQ(view.shownRequest(), "r0");
    EXPECT_EQ(view.headline(),
              "r0 (running): 17 tokens computed, 0 from the prefix cache; block table [0, 1, 2, 3, 4]");
    // 20 positions (five blocks of four) over 732 px after the group label.
    EXPECT_EQ(view.positionAt(62 + 36 * 3 + 10), 3);
    EXPECT_EQ(view.positionAt(10), -1);
    EXPECT_EQ(view.positionAt(62 + 732), -1);

    selection.setSelectedRequest("r2");
    session.goToEnd();
    EXPECT_EQ(view.headline(),
              "r2 (finished: the table it held when it finished): 29 tokens computed, 12 from the "
              "prefix cache; block table [0, 1, 2, 7, 8, 9, 4, 3]");
    session.setCurrentStep(3);
    EXPECT_EQ(view.shownRequest(), "") << "r2 has not arrived at step 3, and nothing runs after r0 finished";
    EXPECT_TRUE(view.headline().startsWith("No request running at this step"))
        << view.headline().toStdString();
}

TEST(BlockTableViewTest, ComputedPositionsTakeTheRequestsColour) {
    SessionController session;
    ViewSelection selection;
    BlockTableView view(session, selection);
    view.resize(800, 110);
    session.setRecordedSession({}, testing::designExample(), "example");
    session.setCurrentStep(2);
    const QImage image = view.grab().toImage();
    // Position 1 of r0 (computed) sits in its colour, below the block label row.
    const int x = 62 + 36 + 18;
    bool found = false;
    for (int y = 30; y < 60 && !found; ++y) {
        found = image.pixelColor(x, y) == PlotStyle::requestColour(0);
    }
    EXPECT_TRUE(found);
}

// A chat's 200 tokens leave a few pixels per token: each block shows its tokens as one text across its
// cells, elided to the block; wide enough for a token's own text (18 px), each cell shows its token instead.
TEST(BlockTableViewTest, NarrowCellsShowEachBlocksTextElided) {
    paged::PagedConfig config;
    config.blockSize = 16;
    config.numBlocks = 64;
    config.maxNumBatchedTokens = 256;
    config.maxNumSeqs = 8;
    SessionController session;
    ViewSelection selection;
    BlockTableView view(session, selection);
    session.setRecordedSession({}, testing::builtInWorkload("chat-shared-system-prompt", config), "chat");
    session.setCurrentStep(2);
    selection.setSelectedRequest("user0");
    EXPECT_EQ(view.fullBlockText(0), "You are a helpfu");
    EXPECT_EQ(view.fullBlockText(1), "l assistant for ");
    // 800 px: 13 blocks of 16 positions over 732 px, 3.5 px a token, 54 px a block.
    view.resize(800, 110);
    const QString first = view.blockText(0, 0);
    EXPECT_TRUE(first.endsWith(QChar(0x2026))) << first.toStdString();
    EXPECT_TRUE(QStringLiteral("You are a helpfu").startsWith(first.chopped(1))) << first.toStdString();
    EXPECT_GE(first.size(), 4) << "a few characters are readable";
    EXPECT_TRUE(view.blockText(0, 99).isEmpty()) << "no such slot";
    // 3000 px: 14 px a token, still too narrow for its own text, but a block's 16 characters fit whole.
    view.resize(3000, 110);
    EXPECT_EQ(view.blockText(0, 0), "You are a helpfu");
    EXPECT_EQ(view.blockText(0, 1), "l assistant for ");
    const QImage image = view.grab().toImage();
    EXPECT_FALSE(image.isNull());
    // The design example at 800 px: 36 px a token, each cell its own token, no block text.
    session.setRecordedSession({}, testing::designExample(), "example");
    session.setCurrentStep(2);
    view.resize(800, 110);
    EXPECT_TRUE(view.blockText(0, 0).isEmpty());
}

} // namespace
} // namespace kvscope::gui
