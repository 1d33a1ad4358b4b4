// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/views/ServerCacheChart.h"

#include "kvscope/gui/models/ServerCacheHistory.h"
#include "kvscope/gui/session/SessionController.h"
#include "kvscope/gui/views/PlotStyle.h"

#include <algorithm>

namespace kvscope::gui {
namespace {

QString titleOf(ServerCacheChart::Metric metric) {
    switch (metric) {
    case ServerCacheChart::Metric::BlocksHeld:
        return QObject::tr("Server's cached blocks, per medium and group");
    case ServerCacheChart::Metric::StoredRemoved:
        return QObject::tr("Blocks stored and removed per message");
    case ServerCacheChart::Metric::HitRate:
        return QObject::tr("Server's prefix hit rate (%, from /metrics)");
    }
    return {};
}

} // namespace

ServerCacheChart::ServerCacheChart(SessionController& session, ViewSelection& selection, Metric metric,
                                   QWidget* parent)
    : StepChart(session, selection, titleOf(metric), parent), m_metric(metric) {
    PlotStyle::legendBelow(this);
    rebuild();
}

QStringList ServerCacheChart::seriesNames() const {
    QStringList names;
    switch (m_metric) {
    case Metric::BlocksHeld:
        for (const auto& [place, held] : m_session.server().heldBlocks()) {
            names << tr("%1 group %2").arg(QString::fromStdString(place.first)).arg(place.second);
        }
        break;
    case Metric::StoredRemoved:
        names << tr("stored") << tr("removed");
        break;
    case Metric::HitRate:
        names << tr("hit rate");
        break;
    }
    return names;
}

std::vector<trace::SeriesPoint> ServerCacheChart::series(int index, std::int64_t first, std::int64_t last) const {
    std::vector<trace::SeriesPoint> points;
    const ServerCacheHistory& history = m_session.server();
    if (!history.active() || index < 0) {
        return points;
    }
    first = std::max<std::int64_t>(0, first);
    last = std::min(last, history.stepCount() - 1);
    if (m_metric == Metric::BlocksHeld) {
        const auto& held = history.heldBlocks();
        if (index >= static_cast<int>(held.size())) {
            return points;
        }
        const std::vector<std::int64_t>& values = std::next(held.begin(), index)->second;
        for (std::int64_t step = first; step <= last && step < static_cast<std::int64_t>(values.size()); ++step) {
            points.push_back({step, static_cast<double>(values[static_cast<std::size_t>(step)])});
        }
        return points;
    }
    for (std::int64_t step = first; step <= last; ++step) {
        const ServerCacheHistory::StepCounts& counts = history.steps()[static_cast<std::size_t>(step)];
        if (m_metric == Metric::StoredRemoved) {
            points.push_back({step, static_cast<double>(index == 0 ? counts.stored : counts.removed)});
        } else if (counts.hitRate >= 0) {
            points.push_back({step, counts.hitRate});
        }
    }
    return points;
}

void ServerCacheChart::forgetSession() {
    for (QCPGraph* graph : m_graphs) {
        removeGraph(graph);
    }
    m_graphs.clear();
}

void ServerCacheChart::ensureGraphs() {
    const QStringList names = seriesNames();
    while (m_graphs.size() < static_cast<std::size_t>(names.size())) {
        const int index = static_cast<int>(m_graphs.size());
        const QColor colour = PlotStyle::seriesColour(m_metric == Metric::StoredRemoved ? index * 2 : index);
        QCPGraph* graph = addGraph();
        graph->setPen(QPen(colour, 1.5));
        m_graphs.push_back(graph);
    }
    for (std::size_t index = 0; index < m_graphs.size(); ++index) {
        m_graphs[index]->setName(names.value(static_cast<qsizetype>(index)));
    }
}

void ServerCacheChart::rebuild() {
    ensureGraphs();
    const auto [first, last] = sampledSteps();
    double maxValue = 0.0;
    for (std::size_t index = 0; index < m_graphs.size(); ++index) {
        QCPGraph* graph = m_graphs[index];
        graph->setLineStyle(seriesLineStyle());
        QVector<double> keys;
        QVector<double> values;
        for (const trace::SeriesPoint& point :
             trace::SeriesDownsampler::minMax(series(static_cast<int>(index), first, last), pointBudget())) {
            keys << static_cast<double>(point.step);
            values << point.value;
            maxValue = std::max(maxValue, point.value);
        }
        setSeries(graph, keys, values);
    }
    yAxis->setRange(0.0, m_metric == Metric::HitRate ? 105.0 : std::max(1.0, maxValue * 1.15));
    if (!m_session.server().active()) {
        setMessage(tr("Not an attached server's session"));
    } else if (m_metric == Metric::HitRate && m_session.server().latest().prefixCacheQueries < 0) {
        setMessage(tr("No hit rate: give the server's metrics address (--metrics http://HOST:PORT/metrics)"));
    } else {
        setMessage(QString());
    }
}

} // namespace kvscope::gui
