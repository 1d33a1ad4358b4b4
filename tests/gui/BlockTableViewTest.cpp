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

} // namespace
} // namespace kvscope::gui
