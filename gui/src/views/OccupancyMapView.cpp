// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/views/OccupancyMapView.h"

#include "kvscope/gui/geometry/OccupancyGeometry.h"
#include "kvscope/gui/geometry/PressGeometry.h"
#include "kvscope/gui/models/SessionTokens.h"
#include "kvscope/gui/views/PlotStyle.h"
#include "kvscope/gui/session/SessionController.h"
#include "kvscope/gui/geometry/TimelineGeometry.h"
#include "kvscope/gui/session/ViewSelection.h"
#include "kvscope/trace/LayerKind.h"
#include "kvscope/gui/views/SessionFailurePanel.h"

#include <QMouseEvent>
#include <QWheelEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>
#include <cmath>

namespace kvscope::gui {
namespace {

constexpr int kMapLabelWidth = 112;
constexpr int kLegendLineHeight = 18;
constexpr int kAxisHeight = 20;
constexpr int kTokenStripHeight = 20;
constexpr int kColumnLabelHeight = 64;
/// A wheel notch zooms by this factor; the zoom stops at this many positions.
constexpr double kZoomStep = 0.8;
constexpr std::int64_t kMinimumZoomPositions = 4;

/// The map's labels: smaller than the widget's font.
QFont mapFont(const QFont& base) {
    QFont font = base;
    font.setPointSizeF(8.5);
    return font;
}

QString shortKind(trace::LayerKind kind) {
    switch (kind) {
    case trace::LayerKind::Dynamic:
        return QStringLiteral("dynamic");
    case trace::LayerKind::DynamicSlidingWindow:
        return QStringLiteral("dyn. sliding");
    case trace::LayerKind::Static:
        return QStringLiteral("static");
    case trace::LayerKind::StaticSlidingWindow:
        return QStringLiteral("static sliding");
    case trace::LayerKind::Quantized:
        return QStringLiteral("quantized");
    case trace::LayerKind::LinearAttention:
        return QStringLiteral("linear attn");
    case trace::LayerKind::LinearAttentionAndFullAttention:
        return QStringLiteral("linear+full");
    }
    return {};
}

// A "nice" tick step for an axis of `extent` positions over `pixels`: about one label per 90 px.
std::int64_t tickStep(std::int64_t extent, int pixels) {
    const double raw = static_cast<double>(extent) * 90.0 / std::max(pixels, 1);
    const double magnitude = std::pow(10.0, std::floor(std::log10(std::max(raw, 1.0))));
    for (const double factor : {1.0, 2.0, 5.0, 10.0}) {
        if (magnitude * factor >= raw) {
            return std::max<std::int64_t>(1, static_cast<std::int64_t>(magnitude * factor));
        }
    }
    return std::max<std::int64_t>(1, static_cast<std::int64_t>(magnitude * 10.0));
}

} // namespace

OccupancyMapView::OccupancyMapView(SessionController& session, ViewSelection& selection, QWidget* parent)
    : QWidget(parent), m_session(session), m_selection(selection),
      m_failurePanel(new SessionFailurePanel(this)) {
    setMouseTracking(true);
    setAttribute(Qt::WA_OpaquePaintEvent);
    m_failurePanel->hide();
    auto refresh = [this] { update(); };
    connect(&session, &SessionController::sessionLoaded, this, [this] {
        m_failureDismissed = false;
        readPresses(true);
        updateFailurePanel();
    });
    connect(&session, &SessionController::sessionGrew, this, [this] { readPresses(false); });
    connect(&session, &SessionController::stepChanged, this, refresh);
    connect(&session, &SessionController::liveStateChanged, this, &OccupancyMapView::updateFailurePanel);
    connect(&selection, &ViewSelection::selectionChanged, this, refresh);
    connect(&selection, &ViewSelection::positionSelected, this, [this](qint64 position) {
        // Zoomed in elsewhere: the span moves to centre the selected position.
        const PositionSpan shown = span();
        if (m_zoom && (position < shown.first || position >= shown.first + shown.count)) {
            m_zoom->first = position - shown.count / 2;
        }
        update();
    });
    connect(m_failurePanel, &SessionFailurePanel::dismissed, this, [this] {
        m_failureDismissed = true;
        update();
    });
}

void OccupancyMapView::updateFailurePanel() {
    const std::optional<LiveFailure>& failure = m_session.liveFailure();
    if (!failure || m_failureDismissed) {
        m_failurePanel->hide();
        return;
    }
    const bool steps = m_session.stepCount() > 0;
    m_failurePanel->setFailure(*failure);
    m_failurePanel->setDismissible(steps);
    const QRect area = steps ? mapRect() : rect();
    const int width = std::max(160, std::min(area.width() - 24, 720));
    const int height =
        std::min(std::max(m_failurePanel->heightForWidth(width), m_failurePanel->minimumSizeHint().height()),
                 std::max(60, area.height() - 16));
    const int x = area.left() + (area.width() - width) / 2;
    const int y = steps ? area.top() + 8 : area.top() + std::max(8, (area.height() - height) / 2);
    m_failurePanel->setGeometry(x, y, width, height);
    m_failurePanel->show();
    m_failurePanel->raise();
    update();
}

void OccupancyMapView::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    updateFailurePanel();
}

int OccupancyMapView::layerCount() const {
    return std::max<int>(m_session.timeline().layerCount(), static_cast<int>(m_session.state()->layers.size()));
}

std::int64_t OccupancyMapView::extent() const {
    return std::max(OccupancyGeometry::positionExtent(m_session.timeline().latestState()),
                    OccupancyGeometry::positionExtent(*m_session.state()));
}

PositionSpan OccupancyMapView::span() const {
    const std::int64_t positions = extent();
    return m_zoom ? OccupancyGeometry::clamped(*m_zoom, positions) : PositionSpan{0, positions};
}

void OccupancyMapView::zoom(double factor, int x) {
    const QRect map = mapRect();
    const std::int64_t positions = extent();
    const PositionSpan zoomed =
        OccupancyGeometry::zoomed(span(), factor, x - map.left(), map.width(), positions, kMinimumZoomPositions);
    // Zoomed all the way out: follow the session as it grows again.
    m_zoom = zoomed.count >= positions ? std::nullopt : std::optional(zoomed);
    update();
}

void OccupancyMapView::resetZoom() {
    m_zoom.reset();
    update();
}

std::vector<ColumnLabel> OccupancyMapView::columnLabels() const {
    if (m_session.metadata().promptPieces.empty()) {
        return {};
    }
    return OccupancyGeometry::columnLabels(span(), mapWidth(), QFontMetrics(mapFont(font())).height());
}

int OccupancyMapView::mapWidth() const { return std::max(1, width() - kMapLabelWidth - 10); }

QRect OccupancyMapView::columnLabelRect() const {
    if (columnLabels().empty()) {
        return {};
    }
    return QRect(kMapLabelWidth, legendHeight() + 4, mapWidth(), kColumnLabelHeight - 4);
}

int OccupancyMapView::legendHeight() const { return m_press.empty() ? kLegendLineHeight + 4 : 2 * kLegendLineHeight + 4; }

QRect OccupancyMapView::mapRect() const {
    const QRect labels = columnLabelRect();
    const int top = labels.isEmpty() ? legendHeight() + 4 : labels.bottom() + 5;
    return QRect(kMapLabelWidth, top, mapWidth(),
                 std::max(1, height() - top - kAxisHeight - kTokenStripHeight - 4));
}

QRect OccupancyMapView::tokenStripRect() const {
    const QRect map = mapRect();
    return QRect(map.left(), map.bottom() + 3, map.width(), kTokenStripHeight - 4);
}

int OccupancyMapView::stripLayer() const {
    const int selected = m_selection.selectedLayer();
    const auto layers = static_cast<int>(m_session.state()->layers.size());
    return selected >= 0 && selected < layers ? selected : (layers > 0 ? 0 : -1);
}

QString OccupancyMapView::tokenAt(int x) const {
    const QRect map = mapRect();
    const std::int64_t position = OccupancyGeometry::xToPosition(x - map.left(), span(), map.width());
    const std::optional<std::string> piece = SessionTokens::pieceAt(m_session.metadata(), m_session.timeline(), position, &m_session.speculation());
    return piece ? QString::fromStdString(*piece) : QString();
}

const PressHistory::Compression* OccupancyMapView::compressionOf(int layer) const {
    return m_press.latestAt(layer, m_session.currentStep());
}

const OccupancyMapView::PressedLayer* OccupancyMapView::pressedLayer(int layer) const {
    const PressHistory::Compression* compression = compressionOf(layer);
    if (compression == nullptr) {
        return nullptr;
    }
    auto found = m_pressedLayers.find(compression);
    if (found == m_pressedLayers.end()) {
        PressedLayer pressed;
        pressed.dropped = PressGeometry::droppedSegments(compression->event);
        pressed.scores = PressGeometry::keptScores(compression->event);
        pressed.shades = PressGeometry::rankShades(pressed.scores);
        found = m_pressedLayers.emplace(compression, std::move(pressed)).first;
    }
    return &found->second;
}

void OccupancyMapView::readPresses(bool newSession) {
    // The history's vector may move as it grows: what was derived from its entries goes with it.
    m_pressedLayers.clear();
    if (newSession) {
        m_press.reset();
    }
    m_press.update(m_session.timeline());
    update();
}

std::vector<SlotSegment> OccupancyMapView::segmentsFor(int layer) const {
    const trace::StepState& state = *m_session.state();
    if (layer < 0 || static_cast<std::size_t>(layer) >= state.layers.size()) {
        return {};
    }
    std::vector<SlotSegment> segments = OccupancyGeometry::segmentsOf(state.layers[static_cast<std::size_t>(layer)]);
    if (const PressedLayer* pressed = pressedLayer(layer)) {
        segments = PressGeometry::overlaid(segments, pressed->dropped);
    }
    return segments;
}

std::optional<SlotState> OccupancyMapView::slotAt(int layer, std::int64_t position) const {
    return PressGeometry::stateAt(segmentsFor(layer), position);
}

void OccupancyMapView::setScoreOverlay(bool shown) {
    m_scoreOverlay = shown;
    update();
}

bool OccupancyMapView::hasPressScores() const {
    for (int layer = 0; layer < layerCount(); ++layer) {
        const PressHistory::Compression* compression = compressionOf(layer);
        if (compression != nullptr && !compression->event.keptScores.empty()) {
            return true;
        }
    }
    return false;
}

QStringList OccupancyMapView::legendEntries() const {
    QStringList entries;
    for (int index = 0; index < kSlotStateCount; ++index) {
        if (!isPressState(static_cast<SlotState>(index))) {
            entries << PlotStyle::slotName(static_cast<SlotState>(index));
        }
    }
    entries << tr("window");
    if (!m_press.empty()) {
        entries << PlotStyle::slotName(SlotState::Dropped) << PlotStyle::slotName(SlotState::PartlyDropped);
        if (m_scoreOverlay && hasPressScores()) {
            entries << tr("press score rank");
        }
    }
    return entries;
}

void OccupancyMapView::paintScores(QPainter& painter, const QRectF& row, int layer, const PositionSpan& span) {
    const PressedLayer* pressed = pressedLayer(layer);
    if (pressed == nullptr) {
        return;
    }
    const double width = row.width();
    for (std::size_t index = 0; index < pressed->scores.size(); ++index) {
        const PositionScore& kept = pressed->scores[index];
        if (kept.position < span.first || kept.position >= span.first + span.count) {
            continue;
        }
        const double x0 = row.left() + OccupancyGeometry::positionToX(kept.position, span, width);
        const double x1 = row.left() + OccupancyGeometry::positionToX(kept.position + 1, span, width);
        // The lower two thirds of the cell, so that the state colour stays visible above the shade.
        const double top = row.top() + row.height() / 3.0;
        painter.fillRect(QRectF(x0, top, std::max(x1 - x0, 1.0), row.bottom() - top),
                         PlotStyle::scoreColour(pressed->shades[index]));
    }
}

QString OccupancyMapView::describe(int layer, std::int64_t position) const {
    const std::optional<SlotState> slot = slotAt(layer, position);
    const std::optional<std::string> piece = SessionTokens::pieceAt(m_session.metadata(), m_session.timeline(), position, &m_session.speculation());
    const QString token =
        piece ? QStringLiteral(" \u201c%1\u201d").arg(QString::fromStdString(SessionTokens::visible(*piece))) : QString();
    QString score;
    if (const PressedLayer* pressed = pressedLayer(layer)) {
        const auto kept = std::lower_bound(pressed->scores.begin(), pressed->scores.end(), position,
                                           [](const PositionScore& score, std::int64_t value) { return score.position < value; });
        if (kept != pressed->scores.end() && kept->position == position) {
            score = tr(", press score %1").arg(kept->score, 0, 'g', 3);
        }
    }
    return tr("layer %1, position %2%3: %4%5")
        .arg(layer)
        .arg(position)
        .arg(token, slot ? PlotStyle::slotName(*slot) : tr("not allocated"), score);
}

void OccupancyMapView::paintColumnLabels(QPainter& painter, const PositionSpan& span) {
    const QRect band = columnLabelRect();
    if (band.isEmpty()) {
        return;
    }
    const trace::SessionMetadata& metadata = m_session.metadata();
    const std::int64_t produced = SessionTokens::producedPosition(metadata, m_session.currentStep(), &m_session.speculation());
    const QFontMetrics metrics(painter.font());
    const double lineHeight = metrics.height();
    for (const ColumnLabel& label : OccupancyGeometry::columnLabels(span, band.width(), lineHeight)) {
        const std::optional<std::string> piece =
            label.position <= produced ? SessionTokens::pieceAt(metadata, m_session.timeline(), label.position, &m_session.speculation())
                                       : std::nullopt;
        if (!piece) {
            continue;
        }
        const QString text = metrics.elidedText(QString::fromStdString(SessionTokens::visible(*piece)), Qt::ElideRight,
                                                band.height() - 4);
        // Written upwards from the band's bottom, centred on the column.
        painter.save();
        painter.translate(band.left() + (label.x0 + label.x1) / 2.0, band.bottom());
        painter.rotate(-90);
        painter.setPen(label.position == produced ? PlotStyle::cursorColour() : QColor(40, 40, 50));
        painter.drawText(QRectF(2, -lineHeight / 2.0, band.height() - 4, lineHeight), Qt::AlignLeft | Qt::AlignVCenter,
                         text);
        painter.restore();
    }
}

void OccupancyMapView::paintTokenStrip(QPainter& painter, const PositionSpan& span) {
    const QRect strip = tokenStripRect();
    const int layer = stripLayer();
    const trace::SessionMetadata& metadata = m_session.metadata();
    painter.setPen(QColor(60, 60, 70));
    m_texts.draw(painter, QRectF(4, strip.top() - 2, kMapLabelWidth - 8, strip.height() + 4),
                 Qt::AlignVCenter | Qt::AlignRight, layer >= 0 ? tr("tokens, L%1").arg(layer) : tr("tokens"));
    if (metadata.promptPieces.empty()) {
        painter.setPen(QColor(120, 120, 130));
        m_texts.draw(painter, QRectF(strip), Qt::AlignVCenter | Qt::AlignLeft,
                     tr("this session records no token texts (format 1.0)"));
        return;
    }
    const std::vector<SlotSegment> segments = segmentsFor(layer);
    const std::int64_t produced = SessionTokens::producedPosition(metadata, m_session.currentStep(), &m_session.speculation());
    const double width = strip.width();
    const double cell = width / static_cast<double>(std::max<std::int64_t>(span.count, 1));
    const auto colourAt = [&](std::int64_t position) {
        const std::optional<SlotState> slot = PressGeometry::stateAt(segments, position);
        // Lighter than the map's cells, so that the text stays readable on them.
        return slot ? PlotStyle::slotColour(*slot).lighter(150) : QColor(250, 250, 252);
    };
    if (cell < 1.0) {
        // More tokens than pixels: one colour per pixel column, no text.
        for (int px = 0; px < strip.width(); ++px) {
            const std::int64_t position = OccupancyGeometry::xToPosition(px, span, width);
            if (position <= produced) {
                painter.fillRect(QRectF(strip.left() + px, strip.top(), 1, strip.height()), colourAt(position));
            }
        }
    } else {
        const QFontMetrics metrics(painter.font());
        for (std::int64_t position = span.first; position <= std::min(produced, span.first + span.count - 1);
             ++position) {
            const double x0 = strip.left() + OccupancyGeometry::positionToX(position, span, width);
            const QRectF box(x0, strip.top(), std::max(cell - (cell >= 4 ? 1.0 : 0.0), 1.0), strip.height());
            painter.fillRect(box, colourAt(position));
            if (cell >= 7) {
                const std::optional<std::string> piece = SessionTokens::pieceAt(metadata, m_session.timeline(), position, &m_session.speculation());
                if (piece) {
                    painter.setPen(QColor(30, 30, 40));
                    const QString text = metrics.elidedText(QString::fromStdString(SessionTokens::visible(*piece)),
                                                            Qt::ElideRight, static_cast<int>(box.width()) - 2);
                    painter.drawText(box.adjusted(1, 0, -1, 0), Qt::AlignVCenter | Qt::AlignHCenter, text);
                }
            }
        }
    }
    if (produced >= span.first && produced < span.first + span.count) {
        // The token this step produced: not in the cache yet, fed to the next step.
        const double x0 = strip.left() + OccupancyGeometry::positionToX(produced, span, width);
        painter.setPen(QPen(PlotStyle::cursorColour(), 2));
        painter.setBrush(Qt::NoBrush);
        painter.drawRect(QRectF(x0, strip.top(), std::max(cell, 2.0), strip.height()));
    }
}

int OccupancyMapView::layerAt(int y) const {
    const QRect rect = mapRect();
    return TimelineGeometry::laneAt(y, layerCount(), rect.top(), rect.height());
}

void OccupancyMapView::paintEvent(QPaintEvent*) {
    QPainter painter(this);
    painter.fillRect(rect(), PlotStyle::backgroundColour());
    const QFont font = mapFont(this->font());
    QFont bold = font;
    bold.setBold(true);
    m_texts.setFont(font);
    m_boldTexts.setFont(bold);
    const QFontMetrics metrics(font);

    // Legend: the cache's states on the first line; a press's on a second one, in sessions with a press.
    const auto legendText = [&](StaticTextCache& texts, double x, double y, const QString& text) {
        texts.draw(painter, QRectF(x, y + 4, std::max(1.0, width() - x), 14), Qt::AlignLeft, text);
        return x + texts.width(text);
    };
    const auto legendSwatch = [&](double x, double y, SlotState state) {
        painter.fillRect(QRectF(x, y + 6, 12, 11), PlotStyle::slotColour(state));
        painter.setPen(QColor(60, 60, 70));
        return legendText(m_texts, x + 16, y, PlotStyle::slotName(state)) + 14;
    };
    painter.setPen(QColor(60, 60, 70));
    const double statesLeft = legendText(m_boldTexts, 8, 0, tr("Occupancy, step %1").arg(m_session.currentStep())) + 16;
    double x = statesLeft;
    for (int index = 0; index < kSlotStateCount; ++index) {
        if (!isPressState(static_cast<SlotState>(index))) {
            x = legendSwatch(x, 0, static_cast<SlotState>(index));
        }
    }
    painter.setPen(QPen(QColor(30, 30, 30), 1.5));
    painter.drawLine(QPointF(x, 8), QPointF(x, 16));
    painter.drawLine(QPointF(x, 8), QPointF(x + 4, 8));
    painter.drawLine(QPointF(x, 16), QPointF(x + 4, 16));
    painter.setPen(QColor(60, 60, 70));
    legendText(m_texts, x + 8, 0, tr("window"));
    const bool scores = m_scoreOverlay && hasPressScores();
    if (!m_press.empty()) {
        const double y = kLegendLineHeight;
        x = legendText(m_texts, 8, y, tr("Cache press:")) + 16;
        x = std::max(x, statesLeft);
        x = legendSwatch(x, y, SlotState::Dropped);
        x = legendSwatch(x, y, SlotState::PartlyDropped);
        if (scores) {
            for (int stop = 0; stop < 24; ++stop) {
                painter.fillRect(QRectF(x + stop, y + 6, 1, 11), PlotStyle::scoreColour(stop / 23.0));
            }
            legendText(m_texts, x + 28, y, tr("press score rank"));
        }
    }

    const QRect map = mapRect();
    const int layers = layerCount();
    const trace::StepState& state = *m_session.state();
    if (layers == 0 || state.layers.empty()) {
        painter.setPen(QColor(110, 110, 120));
        painter.setFont(font);
        // A failed run says why in its panel over this area; otherwise the map says what it waits for.
        painter.drawText(map, Qt::AlignCenter,
                         m_session.liveFailure() ? QString()
                         : m_session.mode() == SessionController::Mode::Empty
                             ? tr("No session: File → New session, or open a session file")
                             : tr("Waiting for the first step…"));
        return;
    }
    const PositionSpan shown = span();
    const double width = map.width();
    painter.setFont(font);
    paintColumnLabels(painter, shown);
    const bool labelRows = map.height() / layers >= metrics.height() - 3;

    for (int layer = 0; layer < layers; ++layer) {
        const LaneRect lane = TimelineGeometry::laneRect(layer, layers, map.top(), map.height(), layers > 48 ? 0.0 : 1.0);
        const QRectF row(map.left(), lane.top, width, std::max(lane.height, 1.0));
        painter.fillRect(row, QColor(240, 241, 244));
        if (static_cast<std::size_t>(layer) >= state.layers.size()) {
            continue;
        }
        // Zoomed in, segments and window brackets reach past the map: cut at its edges.
        painter.setClipRect(QRectF(map.left(), row.top() - 1, width, row.height() + 2));
        const trace::LayerState& layerState = state.layers[static_cast<std::size_t>(layer)];
        for (const SlotSegment& segment : segmentsFor(layer)) {
            const double x0 = map.left() + OccupancyGeometry::positionToX(segment.begin, shown, width);
            const double x1 = map.left() + OccupancyGeometry::positionToX(segment.end, shown, width);
            painter.fillRect(QRectF(x0, row.top(), std::max(x1 - x0, 1.0), row.height()),
                             PlotStyle::slotColour(segment.state));
        }
        if (scores) {
            paintScores(painter, row, layer, shown);
        }
        if (trace::isSlidingWindow(layerState.kind) && layerState.seqLength > 0) {
            // The window bracket: the positions attention can still reach.
            const double x0 = map.left() + OccupancyGeometry::positionToX(layerState.seqLength - layerState.storedTokens,
                                                                           shown, width);
            const double x1 = map.left() + OccupancyGeometry::positionToX(layerState.seqLength, shown, width);
            painter.setPen(QPen(QColor(20, 20, 20), 1.5));
            const double top = row.top() + 0.5;
            const double bottom = row.bottom() - 0.5;
            painter.drawLine(QPointF(x0, top), QPointF(x0, bottom));
            painter.drawLine(QPointF(x1, top), QPointF(x1, bottom));
            painter.drawLine(QPointF(x0, top), QPointF(std::min(x0 + 4, x1), top));
            painter.drawLine(QPointF(x0, bottom), QPointF(std::min(x0 + 4, x1), bottom));
            painter.drawLine(QPointF(x1, top), QPointF(std::max(x1 - 4, x0), top));
            painter.drawLine(QPointF(x1, bottom), QPointF(std::max(x1 - 4, x0), bottom));
        }
        painter.setClipping(false);
        if (labelRows || layer % std::max(1, layers / 8) == 0) {
            painter.setPen(layer == m_selection.selectedLayer() ? PlotStyle::cursorColour() : QColor(60, 60, 70));
            const QString label = labelRows ? QStringLiteral("L%1 %2").arg(layer).arg(shortKind(layerState.kind))
                                            : QStringLiteral("L%1").arg(layer);
            m_texts.draw(painter, QRectF(4, row.top() - 4, kMapLabelWidth - 8, row.height() + 8),
                         Qt::AlignVCenter | Qt::AlignRight, label);
        }
    }
    if (const int selected = m_selection.selectedLayer(); selected >= 0 && selected < layers) {
        const LaneRect lane = TimelineGeometry::laneRect(selected, layers, map.top(), map.height(), 0.0);
        painter.setPen(QPen(PlotStyle::cursorColour(), 2));
        painter.setBrush(Qt::NoBrush);
        painter.drawRect(QRectF(map.left() - 1, lane.top, width + 2, std::max(lane.height, 2.0)));
    }

    paintTokenStrip(painter, shown);
    if (const std::int64_t selected = m_selection.selectedPosition();
        selected >= shown.first && selected < shown.first + shown.count) {
        PlotStyle::drawPositionMarker(painter, map.left() + OccupancyGeometry::positionToX(selected, shown, width),
                                      map.left() + OccupancyGeometry::positionToX(selected + 1, shown, width),
                                      map.top(), tokenStripRect().bottom());
    }

    // Position axis.
    painter.setPen(QColor(120, 120, 130));
    const int axisY = tokenStripRect().bottom() + 3;
    painter.drawLine(map.left(), axisY, map.right(), axisY);
    const std::int64_t step = tickStep(shown.count, map.width());
    for (std::int64_t position = (shown.first + step - 1) / step * step; position <= shown.first + shown.count;
         position += step) {
        const double px = map.left() + OccupancyGeometry::positionToX(position, shown, width);
        painter.drawLine(QPointF(px, axisY), QPointF(px, axisY + 4));
        m_texts.draw(painter, QRectF(px - 40, axisY + 4, 80, 14), Qt::AlignHCenter | Qt::AlignTop, QString::number(position));
    }
    m_texts.draw(painter, QRectF(4, axisY + 2, kMapLabelWidth - 8, 16), Qt::AlignRight | Qt::AlignTop, tr("token position"));
}

void OccupancyMapView::mousePressEvent(QMouseEvent* event) {
    const int layer = layerAt(static_cast<int>(event->position().y()));
    if (layer >= 0) {
        m_selection.setSelectedLayer(layer);
    }
}

void OccupancyMapView::mouseMoveEvent(QMouseEvent* event) {
    const QPoint point = event->position().toPoint();
    const QRect map = mapRect();
    const bool onStrip = tokenStripRect().contains(point);
    const int layer = onStrip ? stripLayer() : layerAt(point.y());
    const trace::StepState& state = *m_session.state();
    if (layer < 0 || static_cast<std::size_t>(layer) >= state.layers.size() || (!map.contains(point) && !onStrip)) {
        QToolTip::hideText();
        return;
    }
    const std::int64_t position = OccupancyGeometry::xToPosition(point.x() - map.left(), span(), map.width());
    QToolTip::showText(event->globalPosition().toPoint(), describe(layer, position), this);
}

void OccupancyMapView::mouseDoubleClickEvent(QMouseEvent*) { resetZoom(); }

void OccupancyMapView::wheelEvent(QWheelEvent* event) {
    // 120 units are one notch of a mouse wheel; touchpads send fractions of one.
    const double notches = event->angleDelta().y() / 120.0;
    if (notches == 0.0) {
        event->ignore();
        return;
    }
    zoom(std::pow(kZoomStep, notches), static_cast<int>(event->position().x()));
    event->accept();
}

} // namespace kvscope::gui
