// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/views/RequestLanesView.h"

#include "GuiTestHelpers.h"
#include "PagedTestSessions.h"
#include "kvscope/gui/session/ViewSelection.h"

#include <QSignalSpy>
#include <QTest>

namespace kvscope::gui {
namespace {

TEST(RequestLanesViewTest, LanesSayWhatEachRequestDidInEachStep) {
    SessionController session;
    ViewSelection selection;
    RequestLanesView view(session, selection);
    view.resize(800, 200);
    session.setRecordedSession({}, testing::designExample(), "example");
    struct Row {
        int lane;
        std::int64_t step;
        QString text;
    };
    const std::vector<Row> rows = {
        {0, 0,
         "Step 0: r0 computes a prefill chunk: tokens 0 to 14 'You are a helpful assistant. Answer ...', and "
         "samples ' keeps'"},
        {0, 1, "Step 1: r0 decodes token 15 ' keeps', and samples ' keys'"},
        {0, 4, "Step 4: r0 has finished"},
        {1, 2, "Step 2: r1 has not arrived yet"},
        {2, 5,
         "Step 5: r2 computes a prefill chunk: tokens 12 to 28 ' w300 w301 w302 w303 w304 w305 w306 ...', "
         "and "
         "samples ' w5029'"},
    };
    for (const Row& row : rows) {
        EXPECT_EQ(view.describe(row.lane, row.step), row.text) << row.lane << " " << row.step;
    }
    EXPECT_EQ(view.cellText(0, 1), QString::fromUtf8("\u00b7keys"));
    EXPECT_EQ(view.cellText(0, 4), "");

    // Lanes start under a legend line: 20 px each from y = 22; steps share the width after the labels.
    EXPECT_EQ(view.laneAt(10), -1);
    EXPECT_EQ(view.laneAt(22), 0);
    EXPECT_EQ(view.laneAt(72), 2);
    EXPECT_EQ(view.laneAt(82), -1);
    EXPECT_EQ(view.stepAt(30), -1);
    EXPECT_EQ(view.stepAt(62), 0);
    EXPECT_EQ(view.stepAt(62 + 5 * 122 + 60), 5);

    QSignalSpy selected(&selection, &ViewSelection::requestSelected);
    QTest::mouseClick(&view, Qt::LeftButton, {}, QPoint(62 + 4 * 122 + 60, 52));
    EXPECT_EQ(selection.selectedRequest(), "r1");
    EXPECT_EQ(session.currentStep(), 4);
    EXPECT_EQ(selected.count(), 1);
}

TEST(RequestLanesViewTest, PreemptedRequestsWaitAgain) {
    SessionController session;
    ViewSelection selection;
    RequestLanesView view(session, selection);
    view.resize(800, 200);
    session.setRecordedSession({}, testing::preemption(), "preemption");
    EXPECT_EQ(view.describe(1, 5),
              "Step 5: r1 was preempted: its blocks were freed and it waits to be recomputed");
    EXPECT_EQ(view.describe(1, 6), "Step 6: r1 waits in the queue");
    const QImage image = view.grab().toImage();
    EXPECT_FALSE(image.isNull());
}

} // namespace
} // namespace kvscope::gui
