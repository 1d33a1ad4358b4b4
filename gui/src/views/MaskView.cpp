// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/views/MaskView.h"

#include "kvscope/gui/views/PlotStyle.h"
#include "kvscope/gui/session/SessionController.h"
#include "kvscope/gui/session/ViewSelection.h"
#include "kvscope/trace/CompressionLayout.h"

#include <QPainter>

#include <algorithm>
#include <cmath>

namespace kvscope::gui {

MaskView::MaskView(SessionController& session, ViewSelection& selection, QWidget* parent)
    : QWidget(parent), m_session(session), m_selection(selection) {
    setAttribute(Qt::WA_OpaquePaintEvent);
    connect(&session, &SessionController::sessionLoaded, this, [this] {
        m_history.reset();
        update();
    });
    connect(&session, &SessionController::stepChanged, this, [this] { update(); });
    connect(&selection, &ViewSelection::selectionChanged, this, [this] { update(); });
    connect(&selection, &ViewSelection::positionSelected, this, [this] { update(); });
}

int MaskView::shownLayer() const {
    const int layers = static_cast<int>(m_session.state()->layers.size());
    const int selected = m_selection.selectedLayer();
    return selected >= 0 && selected < layers ? selected : (layers > 0 ? 0 : -1);
}

MaskShape MaskView::shapeOf(int layer) const {
    const trace::StepState& state = *m_session.state();
    if (layer < 0 || static_cast<std::size_t>(layer) >= state.layers.size()) {
        return {};
    }
    const std::vector<std::int64_t>& chunks = m_session.metadata().attentionChunkSizes;
    return MaskGeometry::shapeFor(state.layers[static_cast<std::size_t>(layer)],
                                  static_cast<std::size_t>(layer) < chunks.size() ? chunks[static_cast<std::size_t>(layer)] : 0);
}

QString MaskView::headMaskNote(int layer) const {
    m_history.update(m_session.timeline());
    const PressHistory::Compression* latest = m_history.latestAt(layer, m_session.currentStep());
    if (latest == nullptr || latest->event.lengthAfter != latest->event.lengthBefore) {
        return {};
    }
    const trace::CompressionLayout layout(latest->event);
    if (!layout.consistent()) {
        return {};
    }
    if (layout.prunedChannelCount() > 0) {
        return tr("and every slot stays attended: the press zeroed %1 key channels per KV head (KV heads "
                  "view)")
            .arg(layout.prunedChannelCount());
    }
    if (layout.droppedTotal() == 0) {
        return {}; // a decision that kept everything (a SimLayerKV layer that is not lazy)
    }
    std::int64_t fewest = latest->event.lengthBefore;
    std::int64_t most = 0;
    for (std::int32_t head = 0; head < layout.heads(); ++head) {
        fewest = std::min(fewest, layout.droppedCount(head));
        most = std::max(most, layout.droppedCount(head));
    }
    const QString hidden = fewest == most ? QString::number(most) : tr("%1 to %2").arg(fewest).arg(most);
    // The decision follows its step's attention: that step's queries still saw every slot.
    return latest->step < m_session.currentStep()
               ? tr("and per KV head, the press hides %1 of slots 0–%2 (KV heads view)")
                     .arg(hidden)
                     .arg(latest->event.lengthBefore - 1)
               : tr("after this step, the press hides %1 of slots 0–%2 per KV head (KV heads view)")
                     .arg(hidden)
                     .arg(latest->event.lengthBefore - 1);
}

void MaskView::paintEvent(QPaintEvent*) {
    QPainter painter(this);
    painter.fillRect(rect(), PlotStyle::backgroundColour());
    QFont font = painter.font();
    font.setPointSizeF(8.5);
    painter.setFont(font);
    const int layer = shownLayer();
    const MaskShape shape = shapeOf(layer);
    QFont bold = font;
    bold.setBold(true);
    painter.setFont(bold);
    painter.setPen(QColor(60, 60, 70));
    const QString kind = shape.kind == MaskKind::Sliding   ? tr("sliding window %1").arg(shape.span)
                         : shape.kind == MaskKind::Chunked ? tr("chunked, chunk %1").arg(shape.span)
                                                           : tr("full (causal)");
    painter.drawText(QPoint(8, 15), layer >= 0 ? tr("Attention mask, layer %1: %2").arg(layer).arg(kind)
                                               : tr("Attention mask"));
    painter.setFont(font);
    if (layer < 0 || shape.queryLength == 0 || shape.kvLength == 0) {
        painter.setPen(QColor(110, 110, 120));
        painter.drawText(rect(), Qt::AlignCenter,
                         layer < 0 ? tr("No layer yet") : tr("Layer %1 has no mask at this step").arg(layer));
        return;
    }
    painter.drawText(QPoint(8, 31), tr("queries %1 (positions %2–%3) × keys %4, kv_offset %5")
                                        .arg(shape.queryLength)
                                        .arg(shape.queryStart)
                                        .arg(shape.queryStart + shape.queryLength - 1)
                                        .arg(shape.kvLength)
                                        .arg(shape.kvOffset));
    const QString note = headMaskNote(layer);
    if (!note.isEmpty()) {
        painter.drawText(QPoint(8, 45), note);
    }

    const int left = 56;
    const int top = note.isEmpty() ? 58 : 72;
    const QRect area(left, top, std::max(1, width() - left - 12), std::max(1, height() - top - 24));
    // Rows are at most 28 px tall, so a one-row decode step reads as a strip, not a slab.
    const double rowHeight = std::min(28.0, static_cast<double>(area.height()) / static_cast<double>(shape.queryLength));
    const double gridHeight = rowHeight * static_cast<double>(shape.queryLength);
    const double columnWidth = static_cast<double>(area.width()) / static_cast<double>(shape.kvLength);
    const QColor allowed(38, 139, 210);
    const QColor masked(226, 230, 236);
    painter.fillRect(QRectF(area.left(), area.top(), area.width(), gridHeight), masked);
    const std::int64_t pixelRows = static_cast<std::int64_t>(std::ceil(gridHeight));
    const bool sampleRows = shape.queryLength > pixelRows;
    const std::int64_t rows = sampleRows ? pixelRows : shape.queryLength;
    for (std::int64_t index = 0; index < rows; ++index) {
        const std::int64_t row = sampleRows ? index * shape.queryLength / std::max<std::int64_t>(pixelRows, 1) : index;
        const auto [first, last] = MaskGeometry::allowedColumns(shape, row);
        if (last <= first) {
            continue;
        }
        const double y = area.top() + (sampleRows ? static_cast<double>(index) : static_cast<double>(row) * rowHeight);
        const double h = sampleRows ? 1.0 : rowHeight;
        painter.fillRect(QRectF(area.left() + static_cast<double>(first) * columnWidth, y,
                                std::max(static_cast<double>(last - first) * columnWidth, 1.0), h),
                         allowed);
    }
    // Cell grid where cells are big enough to count.
    painter.setPen(QPen(QColor(255, 255, 255), 1));
    if (columnWidth >= 6.0) {
        for (std::int64_t column = 1; column < shape.kvLength; ++column) {
            const double x = area.left() + static_cast<double>(column) * columnWidth;
            painter.drawLine(QPointF(x, area.top()), QPointF(x, area.top() + gridHeight));
        }
    }
    if (rowHeight >= 6.0) {
        for (std::int64_t row = 1; row < shape.queryLength; ++row) {
            const double y = area.top() + static_cast<double>(row) * rowHeight;
            painter.drawLine(QPointF(area.left(), y), QPointF(area.right(), y));
        }
    }
    // The selected token's key column, where the layer still holds it.
    if (const std::int64_t column = m_selection.selectedPosition() - shape.kvOffset;
        m_selection.selectedPosition() >= 0 && column >= 0 && column < shape.kvLength) {
        PlotStyle::drawPositionMarker(painter, area.left() + static_cast<double>(column) * columnWidth,
                                      area.left() + static_cast<double>(column + 1) * columnWidth, area.top(),
                                      area.top() + gridHeight);
    }
    // Axes: key positions on top, query positions on the left.
    painter.setPen(QColor(90, 90, 100));
    painter.drawText(QRect(area.left(), top - 22, area.width(), 12), Qt::AlignLeft,
                     tr("key position %1").arg(shape.kvOffset));
    painter.drawText(QRect(area.left(), top - 22, area.width(), 12), Qt::AlignRight,
                     QString::number(shape.kvOffset + shape.kvLength - 1));
    painter.drawText(QRect(area.left(), top - 22, area.width(), 12), Qt::AlignHCenter, tr("keys →"));
    painter.drawText(QRect(0, area.top(), left - 6, 14), Qt::AlignRight, QString::number(shape.queryStart));
    if (shape.queryLength > 1) {
        painter.drawText(QRectF(0, area.top() + gridHeight - 14, left - 6, 14), Qt::AlignRight,
                         QString::number(shape.queryStart + shape.queryLength - 1));
    }
    painter.drawText(QRect(0, top - 22, left - 6, 12), Qt::AlignRight, tr("query ↓"));
    const double legendY = std::min<double>(area.top() + gridHeight + 10, height() - 14);
    painter.fillRect(QRectF(area.left(), legendY, 10, 10), allowed);
    painter.drawText(QPointF(area.left() + 14, legendY + 9), tr("attends"));
    painter.fillRect(QRectF(area.left() + 80, legendY, 10, 10), masked);
    painter.drawText(QPointF(area.left() + 94, legendY + 9), tr("masked"));
}

} // namespace kvscope::gui
