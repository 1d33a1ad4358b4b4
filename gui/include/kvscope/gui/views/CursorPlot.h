// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <qcustomplot.h>

namespace kvscope::gui {

/// A QCustomPlot with a vertical step cursor painted over its buffered picture: moving the cursor
/// repaints the widget without replotting, and the plot keeps one paint buffer instead of two.
class CursorPlot : public QCustomPlot {
    Q_OBJECT
public:
    explicit CursorPlot(QWidget* parent = nullptr);

    /// The key (x coordinate) the cursor marks; NaN hides it.
    void setCursorKey(double key);
    /// The cursor's pixel column (inside the axis rect), or -1 while its key is outside the axis range.
    int cursorPixel() const;

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    double m_cursorKey;
};

} // namespace kvscope::gui
