// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/views/GanttPlottable.h"

#include <algorithm>
#include <limits>

namespace kvscope::gui {

GanttPlottable::GanttPlottable(QCPAxis* keyAxis, QCPAxis* valueAxis) : QCPAbstractPlottable(keyAxis, valueAxis) {
    setSelectable(QCP::stNone);
    setAntialiasedFill(false);
}

double GanttPlottable::selectTest(const QPointF&, bool, QVariant*) const { return -1.0; }

QCPRange GanttPlottable::getKeyRange(bool& foundRange, QCP::SignDomain) const {
    double lower = std::numeric_limits<double>::max();
    double upper = std::numeric_limits<double>::lowest();
    for (const GanttLane& lane : m_lanes) {
        if (!lane.empty()) {
            lower = std::min(lower, static_cast<double>(lane.front().beginNs));
            upper = std::max(upper, static_cast<double>(lane.back().endNs));
        }
    }
    foundRange = lower <= upper;
    return foundRange ? QCPRange(lower, upper) : QCPRange();
}

QCPRange GanttPlottable::getValueRange(bool& foundRange, QCP::SignDomain, const QCPRange&) const {
    foundRange = !m_lanes.empty();
    return QCPRange(-0.5, static_cast<double>(m_lanes.size()) - 0.5);
}

void GanttPlottable::draw(QCPPainter* painter) {
    QCPAxis* keys = mKeyAxis.data();
    QCPAxis* values = mValueAxis.data();
    if (!keys || !values) {
        return;
    }
    const QRect clip = clipRect();
    const double left = keys->coordToPixel(keys->range().lower);
    const double right = keys->coordToPixel(keys->range().upper);
    std::vector<std::vector<QRectF>> byColour(std::max<std::size_t>(m_palette.size(), 1));
    m_lastDrawn = 0;
    for (std::size_t lane = 0; lane < m_lanes.size(); ++lane) {
        const double y0 = values->coordToPixel(static_cast<double>(lane) - 0.38);
        const double y1 = values->coordToPixel(static_cast<double>(lane) + 0.38);
        const double top = std::min(y0, y1);
        const double height = std::abs(y1 - y0);
        if (top > clip.bottom() || top + height < clip.top()) {
            continue;
        }
        for (const PixelBox& box : TimelineGeometry::mergeToPixels(m_lanes[lane], keys->range().lower,
                                                                    keys->range().upper, left, right - left)) {
            byColour[box.colour % byColour.size()].emplace_back(box.x0, top, box.x1 - box.x0, height);
            ++m_lastDrawn;
        }
    }
    painter->setPen(Qt::NoPen);
    for (std::size_t colour = 0; colour < byColour.size(); ++colour) {
        if (byColour[colour].empty()) {
            continue;
        }
        painter->setBrush(colour < m_palette.size() ? m_palette[colour] : QColor(Qt::gray));
        painter->drawRects(byColour[colour].data(), static_cast<int>(byColour[colour].size()));
    }
}

void GanttPlottable::drawLegendIcon(QCPPainter* painter, const QRectF& rect) const {
    painter->setPen(Qt::NoPen);
    painter->setBrush(m_palette.empty() ? QColor(Qt::gray) : m_palette.front());
    painter->drawRect(rect.adjusted(2, 3, -2, -3));
}

} // namespace kvscope::gui
