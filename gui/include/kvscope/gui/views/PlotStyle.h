// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gui/geometry/OccupancyGeometry.h"

#include <QColor>
#include <QString>

class QCustomPlot;
class QPainter;
class QCPItemText;

namespace kvscope::gui {

enum class TokenFate : std::uint8_t; // models/TokenFates.h

/// One look for every chart and map: colours of slot states, memory tiers and lanes, and the plot
/// set-up (fonts, grid, no antialiasing, legend placement).
class PlotStyle {
public:
    static QColor slotColour(SlotState state);
    static QString slotName(SlotState state);
    /// A transcript token's background for its fate: the occupancy map's colour of the same state, lightened so
    /// that the text stays readable on it.
    static QColor fateColour(TokenFate fate);
    /// What a fate means, in words ("slid out of the window").
    static QString fateName(TokenFate fate);
    /// The score overlay's colour of a kept token whose score ranks `shade` (0 lowest .. 1 highest) in its layer.
    static QColor scoreColour(double shade);
    static QColor seriesColour(int index);
    /// A heat map's colour of a value at `shade` (0 .. 1) of its scale: viridis reversed, pale yellow to deep purple
    /// through green and teal, the score overlay's ends.
    static QColor heatColour(double shade);
    /// A serving session's request by its arrival index: a stable colour, distinct from its neighbours' and
    /// from the pool view's grey (cached, free) and white (free).
    static QColor requestColour(int index);
    static QColor cursorColour() { return QColor(220, 50, 47); }
    /// The selected token position's outline, in every view with a position axis.
    static QColor selectionColour() { return QColor(20, 20, 30); }
    /// Outlines the selected position's column [x0, x1) from top to bottom, at least 3 px wide so that a
    /// sub-pixel column still shows.
    static void drawPositionMarker(QPainter& painter, double x0, double x1, double top, double bottom);
    static QColor backgroundColour() { return QColor(250, 250, 252); }

    /// Fonts, grid, margins and drawing hints.
    static void setUp(QCustomPlot* plot, const QString& title);
    /// Shows the legend as one horizontal row under the axis rect, where it hides no data.
    static void legendBelow(QCustomPlot* plot);
    /// A centred message shown when a plot has nothing to draw (hidden with an empty text).
    static QCPItemText* addMessage(QCustomPlot* plot);
};

} // namespace kvscope::gui
