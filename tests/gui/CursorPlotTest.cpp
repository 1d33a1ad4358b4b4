// SPDX-License-Identifier: GPL-3.0-or-later
// CursorPlot: the step cursor painted over the plot's buffer, moved without a replot.

#include "GuiTestHelpers.h"
#include "kvscope/gui/views/CursorPlot.h"
#include "kvscope/gui/views/PlotStyle.h"

#include <QSignalSpy>

#include <cmath>
#include <limits>

namespace kvscope::gui {
namespace {

TEST(CursorPlotTest, PaintsTheCursorAtItsKey) {
    CursorPlot plot;
    plot.resize(400, 200);
    plot.xAxis->setRange(0, 10);
    plot.replot();
    EXPECT_EQ(plot.cursorPixel(), -1) << "no key, no cursor";
    plot.setCursorKey(5);
    const QImage image = plot.grab().toImage(); // also delivers the unshown widget's pending resize
    const int x = plot.cursorPixel();
    EXPECT_EQ(x, static_cast<int>(std::lround(plot.xAxis->coordToPixel(5))));
    const int middle = plot.axisRect()->rect().center().y();
    EXPECT_EQ(QColor(image.pixel(x, middle)), PlotStyle::cursorColour());
    EXPECT_NE(QColor(image.pixel(x + 20, middle)), PlotStyle::cursorColour());
}

TEST(CursorPlotTest, MovingTheCursorDoesNotReplot) {
    CursorPlot plot;
    plot.resize(400, 200);
    plot.xAxis->setRange(0, 10);
    plot.replot();
    QSignalSpy replots(&plot, &QCustomPlot::afterReplot);
    for (int key = 0; key <= 10; ++key) {
        plot.setCursorKey(key);
    }
    EXPECT_EQ(replots.count(), 0);
}

TEST(CursorPlotTest, HidesOutsideTheAxisRange) {
    CursorPlot plot;
    plot.resize(400, 200);
    plot.xAxis->setRange(0, 10);
    plot.replot();
    plot.setCursorKey(10);
    EXPECT_EQ(plot.cursorPixel(), plot.axisRect()->rect().right()) << "the last step shows on the border";
    plot.setCursorKey(25);
    EXPECT_EQ(plot.cursorPixel(), -1);
    plot.xAxis->setRange(20, 30);
    EXPECT_GE(plot.cursorPixel(), 0) << "a pan brings it back";
    plot.setCursorKey(std::numeric_limits<double>::quiet_NaN());
    EXPECT_EQ(plot.cursorPixel(), -1);
}

} // namespace
} // namespace kvscope::gui
