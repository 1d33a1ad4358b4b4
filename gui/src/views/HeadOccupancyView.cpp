// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/views/HeadOccupancyView.h"

#include "kvscope/gui/geometry/OccupancyGeometry.h"
#include "kvscope/gui/models/SessionTokens.h"
#include "kvscope/gui/session/SessionController.h"
#include "kvscope/gui/session/ViewSelection.h"
#include "kvscope/gui/views/PlotStyle.h"

#include <QPainter>
#include <QStringList>
#include <algorithm>

namespace kvscope::gui {
namespace {

/// The occupancy map's label column, so that both views start their positions at the same x.
constexpr int kLabelWidth = 112;
constexpr int kHeaderHeight = 40;
constexpr double kMaximumRowHeight = 18.0;

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
    const std::int64_t covered = SessionTokens::producedPosition(m_session.metadata(), latest->step);
    return HeadOccupancyGeometry::decisionOf(latest->event, latest->step, std::max<std::int64_t>(covered, 0));
}

std::int64_t HeadOccupancyView::positions() const {
    const std::int64_t produced =
        SessionTokens::producedPosition(m_session.metadata(), m_session.currentStep());
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
    for (int index = 0; index < kHeadSlotCount; ++index) {
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
    m_texts.draw(
        painter, QRectF(8, 21, width() - 16, 14), Qt::AlignLeft,
        channels ? tr("key channels zeroed at step %1: every head keeps all %2 positions, the cache keeps "
                      "its size (no memory saved)")
                       .arg(decided->step)
                       .arg(decided->coveredPositions)
                 : tr("%1 at step %2 over positions 0–%3: %4")
                       .arg(decided->masking ? tr("masked") : tr("compressed"))
                       .arg(decided->step)
                       .arg(decided->coveredPositions - 1)
                       .arg(budgets));

    // The axis spans the session's last step, as the occupancy map's does, so stepping fills the rows.
    const std::int64_t last =
        SessionTokens::producedPosition(m_session.metadata(), m_session.stepCount() - 1);
    const PositionSpan span{0, std::max<std::int64_t>({positions(), last, 1})};
    const auto heads = static_cast<int>(decided->kept.size());
    const QRect area(kLabelWidth, kHeaderHeight, std::max(1, width() - kLabelWidth - 10),
                     std::max(1, height() - kHeaderHeight - 6));
    const double rowHeight =
        std::min(kMaximumRowHeight, static_cast<double>(area.height()) / std::max(heads, 1));
    const std::vector<std::vector<HeadRun>> headRows = rows();
    for (int head = 0; head < heads; ++head) {
        const double y = area.top() + head * rowHeight;
        painter.setPen(QColor(60, 60, 70));
        const QString label =
            channels
                ? tr("head %1 · %2 ch zeroed")
                      .arg(head)
                      .arg(decided->prunedChannels[static_cast<std::size_t>(head)].size())
                : tr("head %1 · %2 kept").arg(head).arg(decided->keptCounts[static_cast<std::size_t>(head)]);
        m_texts.draw(painter, QRectF(4, y, kLabelWidth - 10, rowHeight), Qt::AlignRight, label);
        for (const HeadRun& run : headRows[static_cast<std::size_t>(head)]) {
            const double x0 = OccupancyGeometry::positionToX(run.begin, span, area.width());
            const double x1 = OccupancyGeometry::positionToX(run.end, span, area.width());
            painter.fillRect(QRectF(area.left() + x0, y + 1, std::max(x1 - x0, 1.0), rowHeight - 2),
                             headSlotColour(run.slot));
        }
        if (channels) {
            // Which channels, written over the head's row: ThinK changes keys, not the positions held.
            QStringList zeroed;
            for (const std::int32_t channel : decided->prunedChannels[static_cast<std::size_t>(head)]) {
                zeroed << QString::number(channel);
            }
            painter.setPen(QColor(30, 30, 40));
            m_texts.draw(painter, QRectF(area.left() + 4, y, area.width() - 8, rowHeight), Qt::AlignLeft,
                         tr("zeroed key channels %1").arg(zeroed.join(QStringLiteral(", "))));
        }
    }
}

} // namespace kvscope::gui
