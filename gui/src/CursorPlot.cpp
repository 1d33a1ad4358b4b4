#include "kvscope/gui/CursorPlot.h"

#include "kvscope/gui/PlotStyle.h"

#include <QPainter>

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
    if (!std::isfinite(x) || x < area.left() - 0.5 || x > area.right() + 0.5) {
        return -1;
    }
    return static_cast<int>(std::lround(x));
}

void CursorPlot::paintEvent(QPaintEvent* event) {
    QCustomPlot::paintEvent(event);
    const int x = cursorPixel();
    if (x < 0) {
        return;
    }
    QPainter painter(this);
    const QRect area = axisRect()->rect();
    painter.fillRect(QRect(x - 1, area.top(), 2, area.height()), PlotStyle::cursorColour());
}

} // namespace kvscope::gui
