#include "kvscope/gui/StepChart.h"

#include "kvscope/gui/PlotStyle.h"
#include "kvscope/gui/SessionController.h"
#include "kvscope/gui/ViewSelection.h"

#include <algorithm>

namespace kvscope::gui {

StepChart::StepChart(SessionController& session, ViewSelection& selection, const QString& title, QWidget* parent)
    : QCustomPlot(parent), m_session(session), m_selection(selection) {
    PlotStyle::setUp(this, title);
    m_cursor = PlotStyle::addCursor(this);
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
        replot(rpQueuedReplot);
    });
    auto full = [this] {
        rebuild();
        applyStepRange();
        moveCursor();
        replot(rpQueuedReplot);
    };
    connect(&session, &SessionController::sessionLoaded, this, full);
    connect(&session, &SessionController::sessionGrew, this, full);
    connect(&session, &SessionController::stepChanged, this, [this] {
        moveCursor();
        layer(QStringLiteral("cursor"))->replot();
    });
}

void StepChart::setMessage(const QString& text) {
    m_message->setText(text);
    m_message->setVisible(!text.isEmpty());
}

std::size_t StepChart::pointBudget() const { return static_cast<std::size_t>(std::max(200, width())); }

void StepChart::applyStepRange() {
    m_applyingRange = true;
    if (m_selection.hasStepRange()) {
        xAxis->setRange(m_selection.firstStep(), m_selection.lastStep());
    } else {
        xAxis->setRange(0.0, std::max<double>(1.0, static_cast<double>(m_session.stepCount() - 1)));
    }
    m_applyingRange = false;
}

void StepChart::moveCursor() { PlotStyle::moveCursor(m_cursor, static_cast<double>(m_session.currentStep())); }

} // namespace kvscope::gui
