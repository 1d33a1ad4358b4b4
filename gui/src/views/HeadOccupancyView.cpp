// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/views/HeadOccupancyView.h"

#include "kvscope/gui/geometry/OccupancyGeometry.h"
#include "kvscope/gui/models/SessionTokens.h"
#include "kvscope/gui/session/SessionController.h"
#include "kvscope/gui/session/ViewSelection.h"
#include "kvscope/gui/views/CellToolTip.h"
#include "kvscope/gui/views/PlotStyle.h"

#include <QPainter>
#include <QStringList>
#include <algorithm>

namespace kvscope::gui {
namespace {

/// The occupancy map's label column, so that both views start their positions at the same x.
constexpr int kHeadsLabelWidth = 112;
constexpr int kHeaderHeight = 40;
constexpr double kHeadsMaximumRowHeight = 18.0;
/// Lines a head's position map draws at most (every k-th kept key beyond).
constexpr std::size_t kMaximumLinks = 48;
/// Below this row height a re-rotated head's three rows share one label.
constexpr double kLabelledRowHeight = 11.0;

/// "3, 7, 8" of a list of channels or positions.
template <typename List> QString headsJoined(const List& list) {
    QStringList items;
    for (const auto item : list) {
        items << QString::number(item);
    }
    return items.join(QStringLiteral(", "));
}

QColor headSlotColour(HeadSlot slot) {
    switch (slot) {
    case HeadSlot::Kept:
        return PlotStyle::slotColour(SlotState::FullPrecision);
    case HeadSlot::Dropped:
        return PlotStyle::slotColour(SlotState::Dropped);
    case HeadSlot::Masked:
        return QColor(203, 75, 22).lighter(150);
    case HeadSlot::Later:
        return PlotStyle::slotColour(SlotState::FullPrecision).lighter(150);
    case HeadSlot::Vacant:
        return QColor(236, 236, 240);
    }
    return Qt::black;
}

QString headSlotName(HeadSlot slot) {
    switch (slot) {
    case HeadSlot::Kept:
        return QObject::tr("kept");
    case HeadSlot::Dropped:
        return QObject::tr("dropped");
    case HeadSlot::Masked:
        return QObject::tr("masked (in cache, not attended)");
    case HeadSlot::Later:
        return QObject::tr("since the decision");
    case HeadSlot::Vacant:
        return QObject::tr("no key rotated here");
    }
    return {};
}

} // namespace

HeadOccupancyView::HeadOccupancyView(SessionController& session, ViewSelection& selection, QWidget* parent)
    : QWidget(parent), m_session(session), m_selection(selection) {
    setAttribute(Qt::WA_OpaquePaintEvent);
    connect(&session, &SessionController::sessionLoaded, this, [this] {
        m_history.reset();
        update();
    });
    connect(&session, &SessionController::sessionGrew, this, [this] { update(); });
    connect(&session, &SessionController::stepChanged, this, [this] { update(); });
    connect(&selection, &ViewSelection::selectionChanged, this, [this] { update(); });
    connect(&selection, &ViewSelection::positionSelected, this, [this] { update(); });
    setMouseTracking(true);
}

int HeadOccupancyView::shownLayer() const {
    const int layers =
        std::max<int>(m_session.timeline().layerCount(), static_cast<int>(m_session.state()->layers.size()));
    const int selected = m_selection.selectedLayer();
    return selected >= 0 && selected < layers ? selected : (layers > 0 ? 0 : -1);
}

std::optional<HeadDecision> HeadOccupancyView::decision() const {
    m_history.update(m_session.timeline());
    const PressHistory::Compression* latest = m_history.latestAt(shownLayer(), m_session.currentStep());
    if (latest == nullptr) {
        return std::nullopt;
    }
    const std::int64_t covered = SessionTokens::producedPosition(m_session.metadata(), latest->step, &m_session.speculation());
    return HeadOccupancyGeometry::decisionOf(latest->event, latest->step, std::max<std::int64_t>(covered, 0));
}

std::int64_t HeadOccupancyView::positions() const {
    const std::int64_t produced =
        SessionTokens::producedPosition(m_session.metadata(), m_session.currentStep(), &m_session.speculation());
    if (produced >= 0) {
        return produced;
    }
    // No prompt pieces (format 1.0): what the layer holds plus what presses evicted from it.
    const int layer = shownLayer();
    const trace::StepState& state = *m_session.state();
    std::int64_t seen = 0;
    if (layer >= 0 && static_cast<std::size_t>(layer) < state.layers.size()) {
        const trace::LayerState& layerState = state.layers[static_cast<std::size_t>(layer)];
        seen = layerState.seqLength + layerState.evictedTokens;
    }
    const std::optional<HeadDecision> decided = decision();
    return std::max(seen, decided ? decided->coveredPositions : 0);
}

std::vector<std::vector<HeadRun>> HeadOccupancyView::rows() const {
    std::vector<std::vector<HeadRun>> result;
    const std::optional<HeadDecision> decided = decision();
    if (!decided) {
        return result;
    }
    const std::int64_t columns = positions();
    for (std::size_t head = 0; head < decided->kept.size(); ++head) {
        result.push_back(HeadOccupancyGeometry::runsOf(*decided, head, columns));
    }
    return result;
}

std::vector<std::vector<HeadRun>> HeadOccupancyView::rotatedRows() const {
    std::vector<std::vector<HeadRun>> result;
    const std::optional<HeadDecision> decided = decision();
    if (!decided || !decided->rerotated()) {
        return result;
    }
    const std::int64_t columns = positions();
    for (std::size_t head = 0; head < decided->kept.size(); ++head) {
        result.push_back(HeadOccupancyGeometry::rotatedRunsOf(*decided, head, columns));
    }
    return result;
}

HeadOccupancyView::Layout HeadOccupancyView::layoutOf(const HeadDecision& decided) const {
    Layout layout;
    // The axis spans the session's last step, as the occupancy map's does, so stepping fills the rows.
    const std::int64_t last =
        SessionTokens::producedPosition(m_session.metadata(), m_session.stepCount() - 1, &m_session.speculation());
    layout.span = PositionSpan{0, std::max<std::int64_t>({positions(), last, 1})};
    layout.heads = static_cast<int>(decided.kept.size());
    layout.rowsPerHead = decided.rerotated() ? 3 : 1; // token row, map strip, rotated row
    layout.area = QRect(kHeadsLabelWidth, kHeaderHeight, std::max(1, width() - kHeadsLabelWidth - 10),
                        std::max(1, height() - kHeaderHeight - 6));
    layout.rowHeight = std::min(kHeadsMaximumRowHeight, static_cast<double>(layout.area.height()) /
                                                       std::max(layout.heads * layout.rowsPerHead, 1));
    return layout;
}

bool HeadOccupancyView::event(QEvent* event) {
    return CellToolTip::handle(*this, event, [this](const QPoint& point) { return toolTipAt(point); }) ||
           QWidget::event(event);
}

QString HeadOccupancyView::toolTipAt(const QPoint& point) const {
    const std::optional<HeadDecision> decided = decision();
    if (!decided) {
        return {};
    }
    const Layout layout = layoutOf(*decided);
    if (point.x() < layout.area.left() || point.x() > layout.area.right() || point.y() < layout.area.top()) {
        return {};
    }
    const auto band =
        static_cast<int>((point.y() - layout.area.top()) / (layout.rowHeight * layout.rowsPerHead));
    if (band < 0 || band >= layout.heads) {
        return {};
    }
    const auto head = static_cast<std::size_t>(band);
    const auto row = static_cast<int>((point.y() - layout.bandTop(band)) / layout.rowHeight);
    const std::int64_t position =
        OccupancyGeometry::xToPosition(point.x() - layout.area.left(), layout.span, layout.area.width());
    const auto quoted = [&](std::int64_t at) {
        const std::optional<std::string> piece =
            SessionTokens::pieceAt(m_session.metadata(), m_session.timeline(), at, &m_session.speculation());
        return piece ? tr("position %1 “%2”")
                           .arg(at)
                           .arg(QString::fromStdString(SessionTokens::visible(*piece)))
                     : tr("position %1").arg(at);
    };
    // Multi-argument arg(): a token's text may itself hold "%1".
    const QString headName = QString::number(head);
    if (row == 2) {
        // The rotated row: which key's rotation encodes this position now.
        if (const auto from = HeadOccupancyGeometry::rotatedFrom(*decided, head, position)) {
            return tr("head %1: the key of %2 was re-rotated to position %3 (re-rotated from %4)")
                .arg(headName, quoted(*from), QString::number(position), QString::number(*from));
        }
        if (position >= decided->coveredPositions) {
            return tr("head %1, %2: arrived after the decision, at its own position")
                .arg(headName, quoted(position));
        }
        const std::vector<std::int64_t>& rotary = decided->rotary[head];
        const auto [lowest, highest] = std::minmax_element(rotary.begin(), rotary.end());
        return tr("head %1, position %2: no kept key's rotation encodes it any more (the %3 kept keys sit at "
                  "positions %4–%5)")
            .arg(headName, QString::number(position), QString::number(rotary.size()),
                 QString::number(lowest != rotary.end() ? *lowest : 0),
                 QString::number(highest != rotary.end() ? *highest : 0));
    }
    HeadSlot slot = HeadSlot::Later;
    for (const HeadRun& run : HeadOccupancyGeometry::runsOf(*decided, head, layout.span.count)) {
        if (position >= run.begin && position < run.end) {
            slot = run.slot;
        }
    }
    QString text = tr("head %1, %2: %3").arg(headName, quoted(position), headSlotName(slot));
    if (const auto to = HeadOccupancyGeometry::rotatedTo(*decided, head, position)) {
        text += tr("; its key was re-rotated from %1 to %2").arg(position).arg(*to);
    }
    if (head < decided->prunedChannels.size()) {
        text += tr("; key channels %1 zeroed").arg(headsJoined(decided->prunedChannels[head]));
    }
    return text;
}

void HeadOccupancyView::paintEvent(QPaintEvent*) {
    QPainter painter(this);
    painter.fillRect(rect(), PlotStyle::backgroundColour());
    QFont font = this->font();
    font.setPointSizeF(8.5);
    m_texts.setFont(font);
    painter.setFont(font);
    const int layer = shownLayer();
    const std::optional<HeadDecision> decided = decision();

    // Title and legend on one line.
    const QRectF line(8, 4, width() - 16, 14);
    painter.setPen(QColor(60, 60, 70));
    QString title = layer >= 0 ? tr("KV heads, layer %1, step %2").arg(layer).arg(m_session.currentStep())
                               : tr("KV heads");
    m_texts.draw(painter, line, Qt::AlignLeft, title);
    double x = line.left() + m_texts.width(title) + 16;
    // Vacant shows only under re-rotated keys.
    const int legendSlots = decided && decided->rerotated() ? kHeadSlotCount + 1 : kHeadSlotCount;
    for (int index = 0; index < legendSlots; ++index) {
        const auto slot = static_cast<HeadSlot>(index);
        painter.fillRect(QRectF(x, 6, 12, 11), headSlotColour(slot));
        painter.setPen(QColor(60, 60, 70));
        m_texts.draw(painter, line.adjusted(x + 16 - line.left(), 0, 0, 0), Qt::AlignLeft,
                     headSlotName(slot));
        x += 16 + m_texts.width(headSlotName(slot)) + 14;
    }

    if (!decided) {
        painter.setPen(QColor(110, 110, 120));
        painter.drawText(rect().adjusted(0, kHeaderHeight / 2, 0, 0), Qt::AlignCenter,
                         layer < 0
                             ? tr("No layer yet")
                             : tr("No press decision on layer %1 by step %2: every head holds every position")
                                   .arg(layer)
                                   .arg(m_session.currentStep()));
        return;
    }
    const auto [fewest, most] = std::minmax_element(decided->keptCounts.begin(), decided->keptCounts.end());
    const QString budgets = fewest == decided->keptCounts.end() ? QString()
                            : *fewest == *most
                                ? tr("every head keeps %1").arg(*fewest)
                                : tr("heads keep %1 to %2 (per-head budgets)").arg(*fewest).arg(*most);
    painter.setPen(QColor(90, 90, 100));
    const bool channels = !decided->prunedChannels.empty();
    const bool evicted =
        !decided->masking && fewest != decided->keptCounts.end() && *most < decided->coveredPositions;
    QString summary = channels && !evicted
                          ? tr("key channels zeroed at step %1: every head keeps all %2 positions, the cache "
                               "keeps its size (no memory saved)")
                                .arg(decided->step)
                                .arg(decided->coveredPositions)
                          : tr("%1 at step %2 over positions 0–%3: %4")
                                .arg(decided->masking ? tr("masked") : tr("compressed"))
                                .arg(decided->step)
                                .arg(decided->coveredPositions - 1)
                                .arg(budgets);
    if (channels && evicted) {
        summary += tr("; key channels zeroed too (they save no memory)");
    }
    if (decided->rerotated()) {
        summary += tr("; keys re-rotated: under each head, lines from each kept position to its new one");
    }
    m_texts.draw(painter, QRectF(8, 21, width() - 16, 14), Qt::AlignLeft, summary);

    const Layout layout = layoutOf(*decided);
    const QRect& area = layout.area;
    const double rowHeight = layout.rowHeight;
    const std::vector<std::vector<HeadRun>> headRows = rows();
    const std::vector<std::vector<HeadRun>> turnedRows = rotatedRows();
    const auto xOf = [&](double position) {
        return area.left() +
               OccupancyGeometry::positionToX(static_cast<std::int64_t>(position), layout.span, area.width());
    };
    const auto drawRuns = [&](const std::vector<HeadRun>& runs, double y) {
        for (const HeadRun& run : runs) {
            const double x0 = xOf(static_cast<double>(run.begin));
            const double x1 = xOf(static_cast<double>(run.end));
            painter.fillRect(QRectF(x0, y + 1, std::max(x1 - x0, 1.0), rowHeight - 2),
                             headSlotColour(run.slot));
        }
    };
    // Half a column: links join column centres.
    const double halfColumn = (xOf(1.0) - xOf(0.0)) / 2.0;
    for (int head = 0; head < layout.heads; ++head) {
        const auto index = static_cast<std::size_t>(head);
        const double y = layout.bandTop(head);
        painter.setPen(QColor(60, 60, 70));
        QString label = tr("head %1 · %2 kept").arg(head).arg(decided->keptCounts[index]);
        if (channels) {
            label = evicted
                        ? tr("head %1 · %2 kept · %3 ch")
                              .arg(head)
                              .arg(decided->keptCounts[index])
                              .arg(decided->prunedChannels[index].size())
                        : tr("head %1 · %2 ch zeroed").arg(head).arg(decided->prunedChannels[index].size());
        }
        // Sub-rows too thin for labels of their own: the head's label spans its band.
        const bool labelled = !decided->rerotated() || rowHeight >= kLabelledRowHeight;
        m_texts.draw(painter, QRectF(4, y, kHeadsLabelWidth - 10, labelled ? rowHeight : rowHeight * 3),
                     Qt::AlignRight, label);
        drawRuns(headRows[index], y);
        if (channels) {
            // Which channels, written over the head's row: ThinK changes keys, not the positions held.
            painter.setPen(QColor(30, 30, 40));
            m_texts.draw(painter, QRectF(area.left() + 4, y, area.width() - 8, rowHeight), Qt::AlignLeft,
                         tr("zeroed key channels %1").arg(headsJoined(decided->prunedChannels[index])));
        }
        if (!decided->rerotated()) {
            continue;
        }
        // The position map: a line from each kept position down to the position its key now encodes.
        const double stripTop = y + rowHeight;
        const double rotatedTop = y + 2 * rowHeight;
        painter.setRenderHint(QPainter::Antialiasing, true);
        painter.setPen(QPen(QColor(38, 139, 210, 170), 1.0));
        for (const RotaryLink& link : HeadOccupancyGeometry::linksOf(*decided, index, kMaximumLinks)) {
            painter.drawLine(QPointF(xOf(static_cast<double>(link.from)) + halfColumn, stripTop),
                             QPointF(xOf(static_cast<double>(link.to)) + halfColumn, rotatedTop));
        }
        painter.setRenderHint(QPainter::Antialiasing, false);
        if (labelled) {
            painter.setPen(QColor(90, 90, 100));
            m_texts.draw(painter, QRectF(4, stripTop, kHeadsLabelWidth - 10, rowHeight), Qt::AlignRight,
                         tr("re-rotated ↓"));
            m_texts.draw(painter, QRectF(4, rotatedTop, kHeadsLabelWidth - 10, rowHeight), Qt::AlignRight,
                         tr("keys now at"));
        }
        drawRuns(turnedRows[index], rotatedTop);
    }
    if (const std::int64_t selected = m_selection.selectedPosition();
        selected >= layout.span.first && selected < layout.span.first + layout.span.count && layout.heads > 0) {
        PlotStyle::drawPositionMarker(painter, xOf(static_cast<double>(selected)),
                                      xOf(static_cast<double>(selected + 1)), area.top(),
                                      layout.bandTop(layout.heads - 1) + rowHeight * layout.rowsPerHead);
    }
}

} // namespace kvscope::gui
