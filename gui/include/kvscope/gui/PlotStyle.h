#pragma once

#include "kvscope/gui/OccupancyGeometry.h"

#include <QColor>
#include <QString>

class QCustomPlot;
class QCPItemStraightLine;
class QCPItemText;

namespace kvscope::gui {

// One look for every chart and map: colours of slot states, memory tiers and lanes, and the plot
// set-up (fonts, grid, a buffered cursor layer so moving the step cursor does not redraw the data).
class PlotStyle {
public:
    static QColor slotColour(SlotState state);
    static QString slotName(SlotState state);
    static QColor seriesColour(int index);
    static QColor cursorColour() { return QColor(220, 50, 47); }
    static QColor backgroundColour() { return QColor(250, 250, 252); }

    // Fonts, grid and margins; creates the "cursor" layer (buffered) above the main layer.
    static void setUp(QCustomPlot* plot, const QString& title);
    // Shows the legend as one horizontal row under the axis rect, where it hides no data.
    static void legendBelow(QCustomPlot* plot);
    // A vertical line at a key on the cursor layer.
    static QCPItemStraightLine* addCursor(QCustomPlot* plot);
    static void moveCursor(QCPItemStraightLine* cursor, double key);
    // A centred message shown when a plot has nothing to draw (hidden with an empty text).
    static QCPItemText* addMessage(QCustomPlot* plot);
};

} // namespace kvscope::gui
