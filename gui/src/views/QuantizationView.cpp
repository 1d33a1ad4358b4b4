// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/views/QuantizationView.h"

#include "kvscope/gui/session/SessionController.h"
#include "kvscope/gui/session/ViewSelection.h"
#include "kvscope/gui/views/PlotStyle.h"
#include "kvscope/trace/LayerKind.h"

#include <algorithm>

namespace kvscope::gui {

QuantizationView::QuantizationView(SessionController& session, ViewSelection& selection, QWidget* parent)
    : StepChart(session, selection, tr("Quantization: residual fill, flushes, error per flush"), parent) {
    yAxis->setLabel(tr("residual tokens"));
    yAxis2->setVisible(true);
    yAxis2->setLabel(tr("flush error %"));
    m_flushMarkers = addGraph();
    m_flushMarkers->setName(tr("flush"));
    m_flushMarkers->setLineStyle(QCPGraph::lsNone);
    m_flushMarkers->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssTriangleInverted, PlotStyle::cursorColour(),
                                                    PlotStyle::cursorColour(), 7));
    m_flushMarkers->setAdaptiveSampling(false);
    m_errors = addGraph(xAxis, yAxis2);
    m_errors->setName(tr("error per flush"));
    m_errors->setLineStyle(QCPGraph::lsNone);
    m_errors->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDiamond, QColor(88, 88, 98), QColor(180, 180, 190), 6));
    m_errors->setAdaptiveSampling(false);
    PlotStyle::legendBelow(this);
    connect(&selection, &ViewSelection::selectionChanged, this, [this] {
        rebuild();
        replot(rpQueuedReplot);
    });
    rebuild();
}

void QuantizationView::forgetSession() {
    m_flushes.clear();
    m_scannedEvents = 0;
}

void QuantizationView::collectFlushes() {
    const auto events = m_session.timeline().retainedEvents();
    for (; m_scannedEvents < events.size(); ++m_scannedEvents) {
        const trace::Event& event = events[m_scannedEvents];
        if (const auto* flush = std::get_if<trace::QuantizeFlushEvent>(&event.payload)) {
            m_flushes.push_back({event.step, event.layer, static_cast<double>(flush->residualBefore),
                                 flush->relativeError * 100.0});
        }
    }
}

void QuantizationView::rebuild() {
    const trace::Timeline& timeline = m_session.timeline();
    collectFlushes();

    // One residual graph per quantized layer (graphs 0 and 1 are the markers and errors).
    const trace::StepState& latest = timeline.latestState();
    std::vector<int> quantizedLayers;
    for (std::size_t layer = 0; layer < latest.layers.size(); ++layer) {
        if (latest.layers[layer].kind == trace::LayerKind::Quantized) {
            quantizedLayers.push_back(static_cast<int>(layer));
        }
    }
    while (graphCount() > 2 + static_cast<int>(quantizedLayers.size())) {
        removeGraph(graphCount() - 1);
    }
    double maxResidual = 1.0;
    const auto [first, last] = sampledSteps();
    // Up to three layers get a legend entry each; more share one ("residual, 8 layers").
    const bool labelEach = quantizedLayers.size() <= 3;
    for (std::size_t index = 0; index < quantizedLayers.size(); ++index) {
        const int layer = quantizedLayers[index];
        if (graphCount() <= 2 + static_cast<int>(index)) {
            QCPGraph* graph = addGraph();
            graph->setLayer(QStringLiteral("main"));
        }
        QCPGraph* graph = this->graph(2 + static_cast<int>(index));
        graph->setLineStyle(seriesLineStyle());
        graph->setPen(QPen(PlotStyle::seriesColour(static_cast<int>(index)), 1));
        graph->setName(labelEach ? tr("layer %1 residual").arg(layer)
                                 : tr("residual, %1 quantized layers").arg(quantizedLayers.size()));
        if (labelEach || index == 0) {
            graph->addToLegend();
        } else {
            graph->removeFromLegend();
        }
        QVector<double> keys;
        QVector<double> values;
        for (const trace::SeriesPoint& point : timeline.seriesOf(layer, trace::SeriesField::ResidualTokens, first, last,
                                                                 pointBudget())) {
            keys << static_cast<double>(point.step);
            values << point.value;
            maxResidual = std::max(maxResidual, point.value);
        }
        setSeries(graph, keys, values);
    }

    // One marker per flushing step (layers often flush together): the largest residual flushed and the
    // worst error, or the selected layer's; one per run of steps where markers would overlap.
    constexpr double kMarkerPixels = 3.0;
    QVector<double> flushSteps;
    QVector<double> flushHeights;
    QVector<double> errors;
    double maxError = 0.0;
    for (const FlushMarkerGeometry::Marker& marker : FlushMarkerGeometry::markers(
             m_flushes, m_selection.selectedLayer(), first, last, axisRect()->width(), kMarkerPixels)) {
        flushSteps << static_cast<double>(marker.step);
        flushHeights << marker.height;
        errors << marker.error;
        maxResidual = std::max(maxResidual, marker.height);
        maxError = std::max(maxError, marker.error);
    }
    m_flushMarkers->setData(flushSteps, flushHeights, true);
    m_errors->setData(flushSteps, errors, true);
    yAxis->setRange(0.0, maxResidual * 1.15);
    yAxis2->setRange(0.0, std::max(0.1, maxError * 1.25));
    // llama.cpp's cache has no residual: each update quantises its own tokens, a flush marker per step.
    setMessage(quantizedLayers.empty() && m_flushes.empty()
                   ? (timeline.stepCount() == 0
                          ? tr("No session")
                          : tr("No quantized layers in this cache.\nStart a session with cache \"quantized\" to see "
                               "residuals fill and flush,\nor \"llamacpp\" with a quantised K or V type."))
                   : QString());
}

} // namespace kvscope::gui
