// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/views/CursorPlot.h"

#include "kvscope/gui/views/PlotStyle.h"

#include <QPainter>

#include <algorithm>
#include <cmath>
#include <limits>

namespace kvscope::gui {

CursorPlot::CursorPlot(QWidget* parent) : QCustomPlot(parent), m_cursorKey(std::numeric_limits<double>::quiet_NaN()) {}

void CursorPlot::setCursorKey(double key) {
    if (key == m_cursorKey || (std::isnan(key) && std::isnan(m_cursorKey))) {
        return;
    }
    const int before = cursorPixel();
    m_cursorKey = key;
    const int after = cursorPixel();
    const QRect area = axisRect()->rect();
    // Only the columns the old and the new cursor cover are repainted (from the buffer).
    for (const int x : {before, after}) {
        if (x >= 0) {
            update(QRect(x - 2, area.top(), 4, area.height()));
        }
    }
}

int CursorPlot::cursorPixel() const {
    if (std::isnan(m_cursorKey)) {
        return -1;
    }
    const double x = xAxis->coordToPixel(m_cursorKey);
    const QRect area = axisRect()->rect();
    // The range's ends map one pixel outside the rect's last column: a cursor there (the last step of
    // a session, where live stepping happens) is drawn on the border column.
    if (!std::isfinite(x) || x < area.left() - 1.5 || x > area.right() + 1.5) {
        return -1;
    }
    return std::clamp(static_cast<int>(std::lround(x)), area.left(), area.right());
}

void CursorPlot::paintEvent(QPaintEvent* event) {
    QCustomPlot::paintEvent(event);
    const int x = cursorPixel();
    if (x < 0) {
        return;
    }
    QPainter painter(this);
    const QRect area = axisRect()->rect();
    painter.fillRect(QRect(x - 1, area.top(), 2, area.height()) & area, PlotStyle::cursorColour());
}

} // namespace kvscope::gui
