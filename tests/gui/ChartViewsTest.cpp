// SPDX-License-Identifier: GPL-3.0-or-later
// MemoryView and QuantizationView: the two charts over steps (StepChart).

#include "GuiTestHelpers.h"
#include "kvscope/gui/views/MemoryView.h"
#include "kvscope/gui/views/QuantizationView.h"
#include "kvscope/gui/session/ViewSelection.h"

#include <QWheelEvent>

namespace kvscope::gui {
namespace {

TEST(ChartViewsTest, MemoryViewPlotsTheTiers) {
    SessionController session;
    ViewSelection selection;
    MemoryView view(session, selection);
    view.resize(600, 250);
    EXPECT_EQ(view.graph(0)->dataCount(), 0);
    testing::loadSynthetic(session, testing::smallSession(50, true));
    EXPECT_EQ(view.graph(0)->dataCount(), 52) << "one point per step at this width, and the last step's end";
    EXPECT_TRUE(view.graph(2)->visible()) << "an offloading session has host bytes";
    // Steps 0..50, the last one's stair running to 51: it shows beside the cursor, not under it.
    EXPECT_DOUBLE_EQ(view.xAxis->range().upper, 51.0);
    EXPECT_DOUBLE_EQ(view.graph(0)->data()->at(51)->key, 51.0);
    EXPECT_DOUBLE_EQ(view.graph(0)->data()->at(51)->value, view.graph(0)->data()->at(50)->value);
}

TEST(ChartViewsTest, QuantizationViewFindsFlushes) {
    SessionController session;
    ViewSelection selection;
    QuantizationView view(session, selection);
    view.resize(600, 250);
    const auto options = testing::smallSession(50);
    testing::loadSynthetic(session, options);
    // One quantized layer (layer 4 of 8) flushing every residualLength steps.
    EXPECT_GE(view.flushCount(), static_cast<std::size_t>(50 / options.residualLength));
    EXPECT_EQ(view.graphCount(), 3) << "markers, errors and one residual graph";
    EXPECT_GT(view.graph(2)->dataCount(), 0);
}

TEST(ChartViewsTest, QuantizationViewForgetsTheSessionItReplaced) {
    // A second session with more events than the first: its flushes only, not the first one's too.
    auto first = testing::smallSession(50);
    auto second = testing::smallSession(80);
    second.residualLength = 16;
    SessionController fresh;
    ViewSelection freshSelection;
    QuantizationView reference(fresh, freshSelection);
    testing::loadSynthetic(fresh, second);
    SessionController session;
    ViewSelection selection;
    QuantizationView view(session, selection);
    testing::loadSynthetic(session, first);
    ASSERT_GT(view.flushCount(), 0u);
    testing::loadSynthetic(session, second);
    EXPECT_EQ(view.flushCount(), reference.flushCount());
}

TEST(ChartViewsTest, ZoomReadsTheVisibleStepsInFullDetail) {
    SessionController session;
    ViewSelection selection;
    MemoryView view(session, selection);
    view.resize(600, 250);
    testing::loadSynthetic(session, testing::smallSession(3000));
    EXPECT_LE(view.graph(0)->dataCount(), 600) << "3001 steps downsampled to the width";
    EXPECT_EQ(view.graph(0)->lineStyle(), QCPGraph::lsLine);
    view.xAxis->setRange(100, 120);
    view.replot();
    // Steps 99..121 (one beyond each edge), one point each, drawn as stairs.
    ASSERT_EQ(view.graph(0)->dataCount(), 23);
    EXPECT_DOUBLE_EQ(view.graph(0)->data()->constBegin()->key, 99.0);
    EXPECT_EQ(view.graph(0)->lineStyle(), QCPGraph::lsStepLeft);
    selection.clearStepRange();
    view.replot();
    EXPECT_LE(view.graph(0)->dataCount(), 600);
    EXPECT_GT((view.graph(0)->data()->constEnd() - 1)->key, 2990.0) << "the whole session again";
}

TEST(ChartViewsTest, ZoomIsSharedBetweenCharts) {
    SessionController session;
    ViewSelection selection;
    MemoryView memory(session, selection);
    QuantizationView quantization(session, selection);
    memory.resize(600, 250);
    quantization.resize(600, 250);
    testing::loadSynthetic(session, testing::smallSession(50));
    memory.xAxis->setRange(10, 20);
    EXPECT_TRUE(selection.hasStepRange());
    EXPECT_DOUBLE_EQ(quantization.xAxis->range().lower, 10.0);
    EXPECT_DOUBLE_EQ(quantization.xAxis->range().upper, 20.0);
    selection.clearStepRange();
    EXPECT_DOUBLE_EQ(memory.xAxis->range().upper, 51.0)
        << "the whole session, the last step's stair included";
}

} // namespace
} // namespace kvscope::gui
