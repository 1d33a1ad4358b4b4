// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/views/RequestLanesView.h"

#include "kvscope/gui/geometry/TimelineGeometry.h"
#include "kvscope/gui/models/PagedExplainer.h"
#include "kvscope/gui/models/PagedHistory.h"
#include "kvscope/gui/models/SessionTokens.h"
#include "kvscope/gui/session/SessionController.h"
#include "kvscope/gui/session/ViewSelection.h"
#include "kvscope/gui/views/PlotStyle.h"

#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <algorithm>
#include <cmath>

namespace kvscope::gui {
namespace {

constexpr int kLanesLabelWidth = 56;
constexpr int kLegendHeight = 20;
constexpr int kRowHeight = 20;
constexpr int kLanesMargin = 6;

using Phase = PagedHistory::Phase;

QColor lighter(const QColor& colour, double amount) {
    return QColor::fromRgbF(colour.redF() + (1.0 - colour.redF()) * amount,
                            colour.greenF() + (1.0 - colour.greenF()) * amount,
                            colour.blueF() + (1.0 - colour.blueF()) * amount);
}

const QColor kWaiting(222, 225, 231);
const QColor kPreempted(220, 40, 40);

} // namespace

RequestLanesView::RequestLanesView(SessionController& session, ViewSelection& selection, QWidget* parent)
    : QWidget(parent), m_session(session), m_selection(selection) {
    setMouseTracking(true);
    connect(&session, &SessionController::stepChanged, this, qOverload<>(&QWidget::update));
    connect(&session, &SessionController::sessionLoaded, this, qOverload<>(&QWidget::update));
    connect(&session, &SessionController::sessionGrew, this, qOverload<>(&QWidget::update));
    connect(&selection, &ViewSelection::requestSelected, this, qOverload<>(&QWidget::update));
}

QRect RequestLanesView::lanesRect() const {
    const int lanes = static_cast<int>(m_session.paged().requestIds().size());
    return QRect(kLanesMargin + kLanesLabelWidth, kLegendHeight + 2, std::max(1, width() - 2 * kLanesMargin - kLanesLabelWidth),
                 lanes * kRowHeight);
}

int RequestLanesView::laneAt(int y) const {
    const QRect lanes = lanesRect();
    if (y < lanes.top() || y >= lanes.top() + lanes.height()) {
        return -1;
    }
    return (y - lanes.top()) / kRowHeight;
}

std::int64_t RequestLanesView::stepAt(int x) const {
    const QRect lanes = lanesRect();
    const std::int64_t steps = m_session.paged().stepCount();
    if (steps <= 0 || x < lanes.left() || x >= lanes.left() + lanes.width()) {
        return -1;
    }
    const double step =
        TimelineGeometry::pixelToTime(x, 0.0, static_cast<double>(steps), lanes.left(), lanes.width());
    return std::clamp<std::int64_t>(static_cast<std::int64_t>(std::floor(step)), 0, steps - 1);
}

QString RequestLanesView::cellText(int lane, std::int64_t step) const {
    const PagedHistory& history = m_session.paged();
    if (lane < 0 || static_cast<std::size_t>(lane) >= history.requestIds().size()) {
        return {};
    }
    const std::string& id = history.requestIds()[static_cast<std::size_t>(lane)];
    const PagedHistory::LaneCell cell = history.lane(id, step);
    if ((cell.phase != Phase::Prefill && cell.phase != Phase::Decode) || !cell.samples) {
        return {};
    }
    const std::optional<std::string> piece = history.piece(id, cell.firstPosition + cell.numTokens);
    return piece ? QString::fromStdString(SessionTokens::visible(*piece)) : QString();
}

QString RequestLanesView::describe(int lane, std::int64_t step) const {
    const PagedHistory& history = m_session.paged();
    if (lane < 0 || static_cast<std::size_t>(lane) >= history.requestIds().size() || step < 0) {
        return {};
    }
    const std::string& id = history.requestIds()[static_cast<std::size_t>(lane)];
    const QString name = QString::fromStdString(id);
    const PagedHistory::LaneCell cell = history.lane(id, step);
    const auto quoted = [&](std::int64_t begin, std::int64_t end) {
        const std::optional<std::string> text = history.text(id, begin, end);
        return text ? QStringLiteral(" '%1'").arg(PagedExplainer::preview(*text, 40)) : QString();
    };
    QString what;
    switch (cell.phase) {
    case Phase::Absent:
        what = tr("%1 has not arrived yet").arg(name);
        break;
    case Phase::Waiting:
        what = tr("%1 waits in the queue").arg(name);
        break;
    case Phase::Idle:
        what = tr("%1 is running but the step's token budget ran out before it").arg(name);
        break;
    case Phase::Preempted:
        what = tr("%1 was preempted: its blocks were freed and it waits to be recomputed").arg(name);
        break;
    case Phase::Finished:
        what = tr("%1 has finished").arg(name);
        break;
    case Phase::Prefill:
    case Phase::Decode: {
        const std::int64_t end = cell.firstPosition + cell.numTokens;
        what = cell.phase == Phase::Prefill ? tr("%1 computes a prefill chunk: tokens %2 to %3%4")
                                                  .arg(name)
                                                  .arg(cell.firstPosition)
                                                  .arg(end - 1)
                                                  .arg(quoted(cell.firstPosition, end))
                                            : tr("%1 decodes token %2%3")
                                                  .arg(name)
                                                  .arg(cell.firstPosition)
                                                  .arg(quoted(cell.firstPosition, end));
        if (cell.samples) {
            const QString produced = quoted(end, end + 1);
            what +=
                produced.isEmpty() ? tr(", and samples its next token") : tr(", and samples%1").arg(produced);
        }
        break;
    }
    }
    return tr("Step %1: %2").arg(step).arg(what);
}

void RequestLanesView::paintEvent(QPaintEvent*) {
    QPainter painter(this);
    painter.fillRect(rect(), PlotStyle::backgroundColour());
    const PagedHistory& history = m_session.paged();
    if (!history.active()) {
        painter.drawText(rect(), Qt::AlignCenter, tr("Not a serving session"));
        return;
    }
    // Legend: what the cells mean.
    const QFontMetrics metrics(font());
    int x = kLanesMargin;
    const auto legend = [&](const QColor& fill, const QColor& outline, const QString& label) {
        const QRect swatch(x, 4, 12, 12);
        painter.fillRect(swatch, fill);
        painter.setPen(outline);
        painter.drawRect(swatch.adjusted(0, 0, -1, -1));
        painter.setPen(palette().color(QPalette::WindowText));
        painter.drawText(QRect(x + 16, 0, metrics.horizontalAdvance(label) + 4, kLegendHeight),
                         Qt::AlignVCenter, label);
        x += 16 + metrics.horizontalAdvance(label) + 14;
    };
    const QColor sample = PlotStyle::requestColour(0);
    legend(kWaiting, kWaiting.darker(120), tr("waiting"));
    legend(sample, sample, tr("prefill chunk"));
    legend(lighter(sample, 0.55), sample, tr("decode"));
    legend(Qt::white, sample, tr("running, out of budget"));
    legend(kPreempted, kPreempted, tr("preempted"));

    const QRect lanes = lanesRect();
    const std::int64_t steps = history.stepCount();
    const double stepWidth =
        static_cast<double>(lanes.width()) / static_cast<double>(std::max<std::int64_t>(1, steps));
    const QString selected = m_selection.selectedRequest();
    for (std::size_t lane = 0; lane < history.requestIds().size(); ++lane) {
        const std::string& id = history.requestIds()[lane];
        const QColor colour = PlotStyle::requestColour(static_cast<int>(lane));
        const int top = lanes.top() + static_cast<int>(lane) * kRowHeight;
        const QRect label(kLanesMargin, top, kLanesLabelWidth - 4, kRowHeight - 2);
        if (QString::fromStdString(id) == selected) {
            painter.fillRect(QRect(kLanesMargin, top, width() - 2 * kLanesMargin, kRowHeight - 1),
                             QColor(255, 244, 200));
        }
        painter.fillRect(QRect(label.left(), label.top() + 4, 10, 10), colour);
        painter.setPen(palette().color(QPalette::WindowText));
        painter.drawText(label.adjusted(14, 0, 0, 0), Qt::AlignVCenter | Qt::AlignLeft,
                         QString::fromStdString(id));
        for (std::int64_t step = 0; step < steps; ++step) {
            const PagedHistory::LaneCell cell = history.lane(id, step);
            const double x0 = TimelineGeometry::timeToPixel(
                static_cast<double>(step), 0.0, static_cast<double>(steps), lanes.left(), lanes.width());
            const QRectF box(x0, top + 2, std::max(1.0, stepWidth - (stepWidth > 4 ? 1.0 : 0.0)),
                             kRowHeight - 5);
            switch (cell.phase) {
            case Phase::Absent:
            case Phase::Finished:
                continue;
            case Phase::Waiting:
                painter.fillRect(box, kWaiting);
                break;
            case Phase::Prefill:
                painter.fillRect(box, colour);
                break;
            case Phase::Decode:
                painter.fillRect(box, lighter(colour, 0.55));
                break;
            case Phase::Idle:
                painter.fillRect(box, Qt::white);
                painter.setPen(colour);
                painter.drawRect(box.adjusted(0, 0, -1, -1));
                break;
            case Phase::Preempted:
                painter.fillRect(box, kPreempted);
                break;
            }
            // The step a request finished in ends its lane with a bar.
            if (step + 1 < steps && history.lane(id, step + 1).phase == Phase::Finished) {
                painter.fillRect(QRectF(box.right() - 1, box.top() - 1, 2, box.height() + 2),
                                 QColor(30, 30, 30));
            }
            const QString text = cellText(static_cast<int>(lane), step);
            if (!text.isEmpty() && stepWidth >= metrics.horizontalAdvance(text) + 4) {
                painter.setPen(cell.phase == Phase::Prefill
                                   ? (colour.lightnessF() > 0.6 ? Qt::black : Qt::white)
                                   : Qt::black);
                painter.drawText(box, Qt::AlignCenter, text);
            }
        }
    }
    // The current step.
    const std::int64_t current = m_session.currentStep();
    const double cursor = TimelineGeometry::timeToPixel(static_cast<double>(current) + 0.5, 0.0,
                                                        static_cast<double>(std::max<std::int64_t>(1, steps)),
                                                        lanes.left(), lanes.width());
    painter.setPen(QPen(PlotStyle::cursorColour(), 1));
    painter.drawLine(QPointF(cursor, lanes.top() - 2), QPointF(cursor, lanes.bottom() + 2));
}

void RequestLanesView::mouseMoveEvent(QMouseEvent* event) {
    const QPoint point = event->position().toPoint();
    const int lane = laneAt(point.y());
    const std::int64_t step = stepAt(point.x());
    if (lane < 0 || step < 0) {
        QToolTip::hideText();
        return;
    }
    QToolTip::showText(event->globalPosition().toPoint(), describe(lane, step), this);
}

void RequestLanesView::mousePressEvent(QMouseEvent* event) {
    const QPoint point = event->position().toPoint();
    const int lane = laneAt(point.y());
    if (lane < 0) {
        return;
    }
    m_selection.setSelectedRequest(
        QString::fromStdString(m_session.paged().requestIds()[static_cast<std::size_t>(lane)]));
    if (const std::int64_t step = stepAt(point.x()); step >= 0) {
        m_session.setCurrentStep(step);
    }
}

} // namespace kvscope::gui
