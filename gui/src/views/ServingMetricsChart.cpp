// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/views/ServingMetricsChart.h"

#include "kvscope/gui/models/PagedHistory.h"
#include "kvscope/gui/session/SessionController.h"
#include "kvscope/gui/views/PlotStyle.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace kvscope::gui {
namespace {

QString titleOf(ServingMetricsChart::Metric metric) {
    switch (metric) {
    case ServingMetricsChart::Metric::PoolUsage:
        return QObject::tr("Pool usage (blocks held)");
    case ServingMetricsChart::Metric::HitRate:
        return QObject::tr("Prefix hit rate (%)");
    case ServingMetricsChart::Metric::Evictions:
        return QObject::tr("Evictions and preemptions per step");
    case ServingMetricsChart::Metric::TokensPerStep:
        return QObject::tr("Tokens per step vs budget");
    }
    return {};
}

struct SeriesSpec {
    QString name;
    QColor colour;
    bool filled;
};

std::vector<SeriesSpec> specsOf(ServingMetricsChart::Metric metric) {
    switch (metric) {
    case ServingMetricsChart::Metric::PoolUsage:
        return {{QObject::tr("blocks held"), PlotStyle::seriesColour(0), true},
                {QObject::tr("pool size"), QColor(120, 120, 120), false}};
    case ServingMetricsChart::Metric::HitRate:
        return {{QObject::tr("cumulative"), PlotStyle::seriesColour(0), false},
                {QObject::tr("this step's admissions"), PlotStyle::seriesColour(2), false}};
    case ServingMetricsChart::Metric::Evictions:
        return {{QObject::tr("evictions"), QColor(220, 40, 40), true},
                {QObject::tr("preemptions"), QColor(108, 113, 196), true}};
    case ServingMetricsChart::Metric::TokensPerStep:
        return {{QObject::tr("tokens computed"), PlotStyle::seriesColour(1), true},
                {QObject::tr("budget"), QColor(120, 120, 120), false}};
    }
    return {};
}

/// The value of series `index` after `step`; nullopt where it has none (a hit rate with no admission).
std::optional<double> valueOf(const PagedHistory& history, ServingMetricsChart::Metric metric, int index,
                              std::int64_t step) {
    const PagedHistory::StepMetrics& m = history.metrics(step);
    const trace::PagedPoolEvent& pool = history.pool();
    switch (metric) {
    case ServingMetricsChart::Metric::PoolUsage:
        return index == 0 ? static_cast<double>(m.usedBlocks)
                          : static_cast<double>(pool.numBlocks - (pool.nullBlock >= 0 ? 1 : 0));
    case ServingMetricsChart::Metric::HitRate:
        if (index == 0) {
            return m.totalQueryTokens > 0 ? std::optional(100.0 * static_cast<double>(m.totalHitTokens) /
                                                          static_cast<double>(m.totalQueryTokens))
                                          : std::nullopt;
        }
        return m.queryTokens > 0 ? std::optional(100.0 * static_cast<double>(m.hitTokens) /
                                                 static_cast<double>(m.queryTokens))
                                 : std::nullopt;
    case ServingMetricsChart::Metric::Evictions:
        return static_cast<double>(index == 0 ? m.evictions : m.preemptions);
    case ServingMetricsChart::Metric::TokensPerStep:
        return index == 0 ? static_cast<double>(m.scheduledTokens)
                          : static_cast<double>(pool.maxNumBatchedTokens);
    }
    return std::nullopt;
}

} // namespace

ServingMetricsChart::ServingMetricsChart(SessionController& session, ViewSelection& selection, Metric metric,
                                         QWidget* parent)
    : StepChart(session, selection, titleOf(metric), parent), m_metric(metric) {
    for (const SeriesSpec& spec : specsOf(metric)) {
        QCPGraph* graph = addGraph();
        graph->setName(spec.name);
        graph->setPen(spec.filled ? QPen(spec.colour, 1) : QPen(spec.colour, 1.5, Qt::SolidLine));
        if (spec.filled) {
            QColor fill = spec.colour;
            fill.setAlpha(50);
            graph->setBrush(fill);
        }
        if (metric == Metric::HitRate && m_graphs.size() == 1) {
            // Per-step rates exist only where requests were admitted: points, not a line.
            graph->setLineStyle(QCPGraph::lsNone);
            graph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, spec.colour, spec.colour, 5));
        }
        m_graphs.push_back(graph);
    }
    PlotStyle::legendBelow(this);
    rebuild();
}

std::vector<trace::SeriesPoint> ServingMetricsChart::series(int index, std::int64_t first,
                                                            std::int64_t last) const {
    std::vector<trace::SeriesPoint> points;
    const PagedHistory& history = m_session.paged();
    if (!history.active()) {
        return points;
    }
    first = std::max<std::int64_t>(0, first);
    last = std::min(last, history.stepCount() - 1);
    for (std::int64_t step = first; step <= last; ++step) {
        if (const std::optional<double> value = valueOf(history, m_metric, index, step)) {
            points.push_back({step, *value});
        }
    }
    return points;
}

void ServingMetricsChart::rebuild() {
    const auto [first, last] = sampledSteps();
    double maxValue = 0.0;
    for (int index = 0; index < seriesCount(); ++index) {
        QCPGraph* graph = m_graphs[static_cast<std::size_t>(index)];
        if (!(m_metric == Metric::HitRate && index == 1)) {
            graph->setLineStyle(seriesLineStyle());
        }
        const std::vector<trace::SeriesPoint> all = series(index, first, last);
        QVector<double> keys;
        QVector<double> values;
        for (const trace::SeriesPoint& point : trace::SeriesDownsampler::minMax(all, pointBudget())) {
            keys << static_cast<double>(point.step);
            values << point.value;
            maxValue = std::max(maxValue, point.value);
        }
        if (m_metric == Metric::HitRate && index == 1) {
            graph->setData(keys, values, true); // points of the steps that admitted: no stair to extend
        } else {
            setSeries(graph, keys, values);
        }
    }
    yAxis->setRange(0.0, m_metric == Metric::HitRate ? 105.0 : std::max(1.0, maxValue * 1.15));
    setMessage(!m_session.paged().active() ? tr("Not a serving session") : QString());
}

} // namespace kvscope::gui
