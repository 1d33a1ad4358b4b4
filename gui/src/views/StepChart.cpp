// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/views/StepChart.h"

#include "kvscope/gui/views/PlotStyle.h"
#include "kvscope/gui/session/SessionController.h"
#include "kvscope/gui/session/ViewSelection.h"

#include <algorithm>
#include <cmath>

namespace kvscope::gui {

StepChart::StepChart(SessionController& session, ViewSelection& selection, const QString& title, QWidget* parent)
    : CursorPlot(parent), m_session(session), m_selection(selection) {
    PlotStyle::setUp(this, title);
    m_message = PlotStyle::addMessage(this);
    xAxis->setLabel(tr("step"));
    setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    axisRect()->setRangeDrag(Qt::Horizontal);
    axisRect()->setRangeZoom(Qt::Horizontal);
    connect(xAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this, [this](const QCPRange& range) {
        if (!m_applyingRange) {
            m_selection.setStepRange(range.lower, range.upper);
        }
    });
    connect(&selection, &ViewSelection::stepRangeChanged, this, [this] {
        applyStepRange();
        m_rebuildPending = true;
        replot(rpQueuedReplot);
    });
    // A drag emits many range changes per frame: the data is re-read once, just before drawing.
    connect(this, &QCustomPlot::beforeReplot, this, [this] {
        if (m_rebuildPending) {
            m_rebuildPending = false;
            rebuild();
        }
    });
    auto full = [this] {
        applyStepRange();
        m_rebuildPending = false;
        rebuild();
        moveCursor();
        replot(rpQueuedReplot);
    };
    connect(&session, &SessionController::sessionLoaded, this, [this, full] {
        forgetSession();
        full();
    });
    connect(&session, &SessionController::sessionGrew, this, full);
    connect(&session, &SessionController::stepChanged, this, [this] {
        moveCursor();
    });
}

void StepChart::setMessage(const QString& text) {
    m_message->setText(text);
    m_message->setVisible(!text.isEmpty());
}

std::size_t StepChart::pointBudget() const { return static_cast<std::size_t>(std::max(200, width())); }

std::pair<std::int64_t, std::int64_t> StepChart::sampledSteps() const {
    const std::int64_t last = m_session.stepCount() - 1;
    const QCPRange range = xAxis->range();
    const auto first = static_cast<std::int64_t>(std::floor(range.lower)) - 1;
    const auto end = static_cast<std::int64_t>(std::ceil(range.upper)) + 1;
    return {std::clamp<std::int64_t>(first, 0, std::max<std::int64_t>(last, 0)), std::min(end, last)};
}

QCPGraph::LineStyle StepChart::seriesLineStyle() const {
    const auto [first, last] = sampledSteps();
    return static_cast<double>(last - first + 1) > static_cast<double>(pointBudget()) / 2.0 ? QCPGraph::lsLine
                                                                                            : QCPGraph::lsStepLeft;
}

void StepChart::resizeEvent(QResizeEvent* event) {
    // The point budget follows the width; QCustomPlot replots right after this.
    m_rebuildPending = true;
    CursorPlot::resizeEvent(event);
}

void StepChart::applyStepRange() {
    m_applyingRange = true;
    if (m_selection.hasStepRange()) {
        xAxis->setRange(m_selection.firstStep(), m_selection.lastStep());
    } else {
        // One step past the last: the last step's stair spans [last, last + 1) like every other.
        xAxis->setRange(0.0, std::max<double>(1.0, static_cast<double>(m_session.stepCount())));
    }
    m_applyingRange = false;
}

void StepChart::setSeries(QCPGraph* graph, QVector<double> keys, QVector<double> values) const {
    const double last = static_cast<double>(m_session.stepCount() - 1);
    if (!keys.isEmpty() && keys.back() == last) {
        keys << last + 1.0;
        values << values.back();
    }
    graph->setData(keys, values, true);
}

void StepChart::moveCursor() { setCursorKey(static_cast<double>(m_session.currentStep())); }

} // namespace kvscope::gui
