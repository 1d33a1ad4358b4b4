// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gui/views/GanttLane.h"

#include <qcustomplot.h>

#include <vector>

namespace kvscope::gui {

/// Every box of every lane of the transfer timeline, drawn by one plottable (thousands of QCPItemRects
/// are ~7x slower): keys are nanoseconds, lane i sits at value i. Per lane it draws only the visible
/// slice (binary search) and merges boxes narrower than a pixel.
class GanttPlottable : public QCPAbstractPlottable {
    Q_OBJECT
public:
    GanttPlottable(QCPAxis* keyAxis, QCPAxis* valueAxis);

    /// lanes[i]: boxes of lane i, sorted by begin, not overlapping.
    std::vector<GanttLane>& lanes() { return m_lanes; }
    void setPalette(std::vector<QColor> palette) { m_palette = std::move(palette); }
    /// Boxes drawn by the last draw() after merging (for tests and the benchmark).
    std::size_t lastDrawnBoxes() const { return m_lastDrawn; }

    double selectTest(const QPointF& pos, bool onlySelectable, QVariant* details = nullptr) const override;
    QCPRange getKeyRange(bool& foundRange, QCP::SignDomain inSignDomain = QCP::sdBoth) const override;
    QCPRange getValueRange(bool& foundRange, QCP::SignDomain inSignDomain = QCP::sdBoth,
                           const QCPRange& inKeyRange = QCPRange()) const override;

protected:
    void draw(QCPPainter* painter) override;
    void drawLegendIcon(QCPPainter* painter, const QRectF& rect) const override;

private:
    std::vector<GanttLane> m_lanes;
    std::vector<QColor> m_palette;
    std::size_t m_lastDrawn = 0;
};

} // namespace kvscope::gui
