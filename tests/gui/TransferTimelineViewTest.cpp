// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/views/TransferTimelineView.h"

#include "GuiTestHelpers.h"
#include "kvscope/gui/views/GanttPlottable.h"

#include <QImage>

namespace kvscope::gui {
namespace {

TEST(TransferTimelineViewTest, BuildsSortedLanesFromTransfers) {
    SessionController session;
    TransferTimelineView view(session);
    view.resize(900, 300);
    testing::loadSynthetic(session, testing::smallSession(30, true));
    EXPECT_EQ(view.laneCount(), 2 + 8) << "prefetch, offload and one compute lane per layer";
    EXPECT_GT(view.boxCount(), 0u);
    std::size_t boxes = 0;
    for (const GanttLane& lane : view.gantt()->lanes()) {
        for (std::size_t index = 1; index < lane.size(); ++index) {
            EXPECT_LE(lane[index - 1].beginNs, lane[index].beginNs);
        }
        boxes += lane.size();
    }
    // Every span of the timeline, once, in its lane.
    EXPECT_EQ(boxes, session.timeline().timedSpans().size());
    const GanttLane& compute0 = view.gantt()->lanes()[2];
    ASSERT_FALSE(compute0.empty());
    EXPECT_EQ(compute0.front().layer, 0);
    EXPECT_EQ(compute0.front().colour, GanttLane::kComputeColour);
    // The view follows the current step: its span is on screen.
    session.setCurrentStep(10);
    const auto [begin, end] = view.stepSpan(10);
    ASSERT_LE(begin, end);
    EXPECT_LE(view.xAxis->range().lower, begin);
    EXPECT_GE(view.xAxis->range().upper, end);
    view.replot();
    EXPECT_GT(view.gantt()->lastDrawnBoxes(), 0u);
}

TEST(TransferTimelineViewTest, ZoomingOutMergesBoxesIntoPixels) {
    SessionController session;
    TransferTimelineView view(session);
    view.resize(400, 300);
    testing::loadSynthetic(session, testing::smallSession(400, true));
    bool found = false;
    const QCPRange whole = view.gantt()->getKeyRange(found);
    ASSERT_TRUE(found);
    view.xAxis->setRange(whole);
    view.replot();
    EXPECT_LT(view.gantt()->lastDrawnBoxes(), view.boxCount() / 4) << "sub-pixel boxes are merged";
    EXPECT_LE(view.gantt()->lastDrawnBoxes(), static_cast<std::size_t>(view.laneCount() * view.width()));
}

// The labels a text ticker shows on an axis, by position.
QMap<double, QString> labelsOf(QCPAxis* axis) {
    auto ticker = axis->ticker().dynamicCast<QCPAxisTickerText>();
    return ticker ? ticker->ticks() : QMap<double, QString>{};
}

TEST(TransferTimelineViewTest, StreamLaneLabelsNeverTouch) {
    SessionController session;
    TransferTimelineView view(session);
    auto options = testing::smallSession(20, true);
    view.resize(900, 600);
    testing::loadSynthetic(session, options);
    // Room for every label: all on the left, compute lanes included.
    EXPECT_FALSE(view.yAxis2->visible());
    EXPECT_EQ(labelsOf(view.yAxis).size(), view.laneCount());
    // 32 layers in a short dock: neighbouring stream lanes are thinner than a label, so the offload
    // lane is named on the right.
    options.layers = 32;
    view.resize(900, 260);
    testing::loadSynthetic(session, options);
    EXPECT_TRUE(view.yAxis2->visible());
    EXPECT_EQ(labelsOf(view.yAxis2).value(1.0), "offload (compute)");
    EXPECT_FALSE(labelsOf(view.yAxis).contains(1.0));
    EXPECT_EQ(labelsOf(view.yAxis).value(0.0), "prefetch (side)");
    EXPECT_LT(labelsOf(view.yAxis).size(), view.laneCount()) << "compute labels thinned out";
}

TEST(TransferTimelineViewTest, SaysWhenACacheMovesNothing) {
    SessionController session;
    TransferTimelineView view(session);
    view.resize(600, 200);
    testing::loadSynthetic(session, testing::smallSession(20, false));
    EXPECT_EQ(view.boxCount(), 0u);
    auto* message = view.findChild<QCPItemText*>();
    ASSERT_NE(message, nullptr);
    EXPECT_TRUE(message->visible());
    EXPECT_TRUE(message->text().contains("offloaded"));
}

} // namespace
} // namespace kvscope::gui
