// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/views/BlockPoolView.h"

#include "GuiTestHelpers.h"
#include "PagedTestSessions.h"
#include "kvscope/gui/session/ViewSelection.h"
#include "kvscope/gui/views/PlotStyle.h"

#include <QImage>
#include <QSignalSpy>
#include <QTest>

namespace kvscope::gui {
namespace {

QPoint centreOf(const BlockPoolView& view, int block) {
    const QPoint centre = view.cellRect(block).center();
    EXPECT_EQ(view.blockAt(centre), block);
    return centre;
}

TEST(BlockPoolViewTest, TheDesignDocumentExampleAtItsLastStep) {
    SessionController session;
    ViewSelection selection;
    BlockPoolView view(session, selection);
    view.resize(700, 320);
    EXPECT_TRUE(view.cells().empty());
    EXPECT_TRUE(view.headline().startsWith("No block pool")) << view.headline().toStdString();
    session.setRecordedSession({}, testing::designExample(), "example");
    session.goToEnd();
    ASSERT_EQ(view.cells().size(), 10u);
    // Step 5 (worked in docs/paged.md): r2 reused 0, 1, 2, took 7 8 9 4 3 (evicting 3's hash) and finished;
    // the free queue is 6 5 3 4 9 8 7 2 1 0 and every full block is still cached.
    struct Row {
        BlockCellKind kind;
        int rank;
        bool allocated, touched, evicted;
    };
    const std::vector<Row> rows = {
        {BlockCellKind::CachedFree, 9, false, true, false},
        {BlockCellKind::CachedFree, 8, false, true, false},
        {BlockCellKind::CachedFree, 7, false, true, false},
        {BlockCellKind::Free, 2, true, false, true},
        {BlockCellKind::CachedFree, 3, true, false, false},
        {BlockCellKind::CachedFree, 1, false, false, false},
        {BlockCellKind::Free, 0, false, false, false},
        {BlockCellKind::CachedFree, 6, true, false, false},
        {BlockCellKind::CachedFree, 5, true, false, false},
        {BlockCellKind::CachedFree, 4, true, false, false},
    };
    for (std::size_t block = 0; block < rows.size(); ++block) {
        const BlockCell& cell = view.cells()[block];
        EXPECT_EQ(cell.kind, rows[block].kind) << block;
        EXPECT_EQ(cell.freeRank, rows[block].rank) << block;
        EXPECT_EQ(cell.allocated, rows[block].allocated) << block;
        EXPECT_EQ(cell.touched, rows[block].touched) << block;
        EXPECT_EQ(cell.evicted, rows[block].evicted) << block;
    }
    EXPECT_EQ(view.headline().toStdString(), "Step 5: 0 of 10 blocks held, 8 free and still cached, 2 empty "
                                             "· blocks of 4 tokens · prefix hits 34% "
                                             "so far · 1 evicted this step");
    const QString block7 = view.describeBlock(7);
    EXPECT_TRUE(
        block7.contains("free but still cached: #6 in the free queue, so 6 allocations come before it is "
                        "evicted"))
        << block7.toStdString();
    EXPECT_TRUE(block7.contains("cached by r2: tokens 12 to 15 ' w300 w301 w302 w303'"))
        << block7.toStdString();
    EXPECT_TRUE(block7.contains("this step: allocated")) << block7.toStdString();
    EXPECT_TRUE(view.describeBlock(3).contains("evicted (its old hash forgotten), allocated"));
    EXPECT_EQ(view.legendEntries().mid(0, 3),
              (QStringList{"r0 (finished)", "r1 (finished)", "r2 (finished)"}));
}

TEST(BlockPoolViewTest, HeldBlocksShowTheirRequestsAndAClickSelectsOne) {
    SessionController session;
    ViewSelection selection;
    BlockPoolView view(session, selection);
    view.resize(700, 320);
    session.setRecordedSession({}, testing::sharedFinish(), "shared");
    session.setCurrentStep(1);
    // After step 1: r0 holds 0 1 2; r1 held 0 1 3 and finished, so 0 and 1 are r0's again (reference 1).
    const std::vector<BlockCell>& cells = view.cells();
    ASSERT_EQ(cells.size(), 10u);
    EXPECT_EQ(cells[0].owners, std::vector<int>{0});
    EXPECT_EQ(cells[2].owners, std::vector<int>{0});
    EXPECT_TRUE(cells[2].allocated);
    EXPECT_TRUE(cells[0].touched && cells[1].touched);
    EXPECT_EQ(cells[3].kind, BlockCellKind::Free);
    const QString block1 = view.describeBlock(1);
    EXPECT_TRUE(block1.contains("held by r0: slot 1, tokens 4 to 7 ' assistant. Answer briefly'"))
        << block1.toStdString();
    EXPECT_TRUE(block1.contains("reference count 1")) << block1.toStdString();
    EXPECT_TRUE(block1.contains("hash ")) << block1.toStdString();

    QSignalSpy clicked(&view, &BlockPoolView::requestClicked);
    QTest::mouseClick(&view, Qt::LeftButton, {}, centreOf(view, 2));
    ASSERT_EQ(clicked.count(), 1);
    EXPECT_EQ(clicked.front().front().toString(), "r0");
    EXPECT_EQ(selection.selectedRequest(), "r0");
    // A free block selects nothing.
    QTest::mouseClick(&view, Qt::LeftButton, {}, centreOf(view, 7));
    EXPECT_EQ(clicked.count(), 1);

    // Held blocks are painted in their request's colour.
    const QImage image = view.grab().toImage();
    const QRect cell = view.cellRect(2);
    const QPoint inside(cell.left() + cell.width() / 4, cell.top() + cell.height() / 2 + 2);
    EXPECT_EQ(image.pixelColor(inside), PlotStyle::requestColour(0));
}

TEST(BlockPoolViewTest, SharedBlocksCountTheirHolders) {
    SessionController session;
    ViewSelection selection;
    BlockPoolView view(session, selection);
    view.resize(700, 320);
    // r1 is admitted while r0 runs and both hold blocks 0 and 1 in the step before r1 finishes: r1 asks
    // for 2 outputs so that it is still running after its admission step.
    session.setRecordedSession(
        {},
        testing::serve(
            testing::exampleConfig(),
            {testing::request("r0", 0, testing::ids(100, 8), 6),
             testing::request("r1", 1, testing::join(testing::ids(100, 8), testing::ids(200, 2)), 2)}),
        "shared");
    session.setCurrentStep(1);
    const std::vector<BlockCell>& cells = view.cells();
    EXPECT_EQ(cells[0].owners, (std::vector<int>{0, 1}));
    EXPECT_EQ(cells[0].refCnt, 2);
    EXPECT_EQ(cells[3].owners, std::vector<int>{1});
    const QString block0 = view.describeBlock(0);
    EXPECT_TRUE(block0.contains("held by r0: slot 0")) << block0.toStdString();
    EXPECT_TRUE(block0.contains("held by r1: slot 0")) << block0.toStdString();
    EXPECT_TRUE(block0.contains("reference count 2")) << block0.toStdString();
}

} // namespace
} // namespace kvscope::gui
