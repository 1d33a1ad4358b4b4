// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/views/PlotStyle.h"

#include "kvscope/gui/models/TokenFates.h"

#include <QPainter>
#include <qcustomplot.h>

#include <algorithm>
#include <cmath>

namespace kvscope::gui {

QColor PlotStyle::slotColour(SlotState state) {
    switch (state) {
    case SlotState::Reserved:
        return QColor(226, 230, 236);
    case SlotState::FullPrecision:
        return QColor(38, 139, 210);
    case SlotState::Quantized:
        return QColor(133, 153, 0);
    case SlotState::SlidOut:
        return QColor(190, 170, 150);
    case SlotState::Offloaded:
        return QColor(211, 54, 130);
    case SlotState::Dropped:
        return QColor(220, 50, 47);
    case SlotState::PartlyDropped:
        return QColor(242, 160, 150);
    }
    return Qt::black;
}

QString PlotStyle::slotName(SlotState state) {
    switch (state) {
    case SlotState::Reserved:
        return QObject::tr("allocated, empty");
    case SlotState::FullPrecision:
        return QObject::tr("full precision");
    case SlotState::Quantized:
        return QObject::tr("quantized");
    case SlotState::SlidOut:
        return QObject::tr("slid out");
    case SlotState::Offloaded:
        return QObject::tr("offloaded to host");
    case SlotState::Dropped:
        return QObject::tr("dropped by press");
    case SlotState::PartlyDropped:
        return QObject::tr("dropped by some heads");
    }
    return {};
}

QColor PlotStyle::fateColour(TokenFate fate) {
    switch (fate) {
    case TokenFate::Kept:
        return slotColour(SlotState::FullPrecision).lighter(175);
    case TokenFate::Quantized:
        return slotColour(SlotState::Quantized).lighter(165);
    case TokenFate::Offloaded:
        return slotColour(SlotState::Offloaded).lighter(165);
    case TokenFate::Masked:
        return QColor(196, 186, 226);
    case TokenFate::SlidOut:
        return slotColour(SlotState::SlidOut).lighter(125);
    case TokenFate::PartlyDropped:
        return slotColour(SlotState::PartlyDropped);
    case TokenFate::Dropped:
        return slotColour(SlotState::Dropped).lighter(145);
    case TokenFate::Absent:
        return backgroundColour();
    }
    return backgroundColour();
}

QString PlotStyle::fateName(TokenFate fate) {
    switch (fate) {
    case TokenFate::Kept:
        return QObject::tr("kept");
    case TokenFate::Quantized:
        return QObject::tr("quantized");
    case TokenFate::Offloaded:
        return QObject::tr("offloaded to host");
    case TokenFate::Masked:
        return QObject::tr("masked (held, hidden from attention)");
    case TokenFate::SlidOut:
        return QObject::tr("slid out of the window");
    case TokenFate::PartlyDropped:
        return QObject::tr("dropped by the press from some KV heads");
    case TokenFate::Dropped:
        return QObject::tr("dropped by the press");
    case TokenFate::Absent:
        return QObject::tr("not in the cache yet");
    }
    return {};
}

void PlotStyle::drawPositionMarker(QPainter& painter, double x0, double x1, double top, double bottom) {
    const double middle = (x0 + x1) / 2.0;
    const double half = std::max((x1 - x0) / 2.0, 1.5);
    painter.save();
    painter.setPen(QPen(selectionColour(), 1.5));
    painter.setBrush(Qt::NoBrush);
    painter.drawRect(QRectF(middle - half, top, 2.0 * half, bottom - top));
    painter.restore();
}

QColor PlotStyle::scoreColour(double shade) {
    // Low scores pale yellow, high ones deep purple (viridis' ends), distinct from every slot colour.
    const double t = std::clamp(shade, 0.0, 1.0);
    const auto mix = [t](int low, int high) { return static_cast<int>(std::lround(low + (high - low) * t)); };
    return QColor(mix(253, 68), mix(231, 1), mix(37, 84));
}

QColor PlotStyle::heatColour(double shade) {
    static const QColor anchors[] = {QColor(253, 231, 37), QColor(94, 201, 98), QColor(33, 145, 140),
                                     QColor(59, 82, 139), QColor(68, 1, 84)};
    constexpr int last = static_cast<int>(sizeof(anchors) / sizeof(anchors[0])) - 1;
    const double at = std::clamp(shade, 0.0, 1.0) * last;
    const int low = std::min(static_cast<int>(at), last - 1);
    const double t = at - low;
    const auto mix = [t](int from, int to) { return static_cast<int>(std::lround(from + (to - from) * t)); };
    const QColor& a = anchors[low];
    const QColor& b = anchors[low + 1];
    return QColor(mix(a.red(), b.red()), mix(a.green(), b.green()), mix(a.blue(), b.blue()));
}

QColor PlotStyle::requestColour(int index) {
    // Twelve qualitative colours (ColorBrewer Paired reordered so neighbours differ in hue), then again.
    static const QColor colours[] = {QColor(31, 120, 180),  QColor(255, 127, 0),   QColor(51, 160, 44),
                                     QColor(227, 26, 28),   QColor(106, 61, 154),  QColor(177, 89, 40),
                                     QColor(166, 206, 227), QColor(253, 191, 111), QColor(178, 223, 138),
                                     QColor(251, 154, 153), QColor(202, 178, 214), QColor(225, 200, 60)};
    constexpr int count = static_cast<int>(sizeof(colours) / sizeof(colours[0]));
    return colours[((index % count) + count) % count];
}

QColor PlotStyle::seriesColour(int index) {
    static const QColor colours[] = {QColor(38, 139, 210), QColor(133, 153, 0),  QColor(211, 54, 130),
                                     QColor(203, 75, 22),  QColor(42, 161, 152), QColor(108, 113, 196),
                                     QColor(181, 137, 0),  QColor(220, 50, 47)};
    return colours[static_cast<unsigned>(index) % 8];
}

void PlotStyle::setUp(QCustomPlot* plot, const QString& title) {
    plot->setBackground(backgroundColour());
    // The opaque background covers the whole widget: its parent need not fill underneath first.
    plot->setAttribute(Qt::WA_OpaquePaintEvent);
    plot->setNoAntialiasingOnDrag(true);
    // Step lines, fills and markers are axis-aligned or tiny: antialiasing them costs most of a replot
    // (a 1000-flush quantization chart went from ~250 ms to a few) and buys nothing visible.
    plot->setNotAntialiasedElements(QCP::aeAll);
    // Series pens are 1 px (QCustomPlot draws them cosmetic): one polyline per series rasterises
    // faster than the segment-by-segment drawing of phFastPolylines (about 2x on the dense charts).
    plot->setPlottingHint(QCP::phFastPolylines, false);
    QFont font = plot->font();
    font.setPointSizeF(8.5);
    for (QCPAxis* axis : {plot->xAxis, plot->yAxis, plot->yAxis2}) {
        axis->setTickLabelFont(font);
        axis->setLabelFont(font);
        axis->grid()->setPen(QPen(QColor(220, 222, 228), 0, Qt::DotLine));
        axis->setBasePen(QPen(QColor(120, 120, 130)));
        axis->setTickPen(QPen(QColor(120, 120, 130)));
        axis->setSubTickPen(QPen(QColor(160, 160, 170)));
    }
    // Charts in docks are often short: few value labels keep them from overlapping.
    plot->yAxis->ticker()->setTickCount(4);
    plot->yAxis2->ticker()->setTickCount(4);
    if (!title.isEmpty()) {
        plot->plotLayout()->insertRow(0);
        QFont titleFont = font;
        titleFont.setBold(true);
        titleFont.setPointSizeF(9.0);
        auto* element = new QCPTextElement(plot, title, titleFont);
        element->setMargins(QMargins(0, 4, 0, 0));
        plot->plotLayout()->addElement(0, 0, element);
    }
    plot->legend->setFont(font);
    plot->legend->setBrush(QColor(255, 255, 255, 210));
    plot->legend->setBorderPen(QPen(QColor(200, 200, 205)));
}

void PlotStyle::legendBelow(QCustomPlot* plot) {
    plot->legend->setVisible(true);
    plot->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
    plot->legend->setBorderPen(Qt::NoPen);
    plot->legend->setBrush(Qt::NoBrush);
    plot->legend->setIconSize(14, 8);
    plot->legend->setRowSpacing(0);
    plot->legend->setColumnSpacing(10);
    plot->legend->setMargins(QMargins(4, 0, 4, 2));
    const int row = plot->plotLayout()->rowCount();
    plot->plotLayout()->addElement(row, 0, plot->legend); // takes it out of the axis rect's inset layout
    plot->plotLayout()->setRowStretchFactor(row, 0.001);
}

QCPItemText* PlotStyle::addMessage(QCustomPlot* plot) {
    auto* message = new QCPItemText(plot);
    message->position->setType(QCPItemPosition::ptAxisRectRatio);
    message->position->setCoords(0.5, 0.5);
    message->setPositionAlignment(Qt::AlignCenter);
    message->setTextAlignment(Qt::AlignCenter);
    message->setColor(QColor(110, 110, 120));
    message->setSelectable(false);
    message->setClipToAxisRect(false);
    return message;
}

} // namespace kvscope::gui
