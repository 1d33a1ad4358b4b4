// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gui/views/StepChart.h"
#include "kvscope/trace/SeriesDownsampler.h"

#include <vector>

namespace kvscope::gui {

/// One chart of an attached server's cache over steps (one step per server message), read from the session's
/// ServerCacheHistory, in the style of the other step charts (PlotStyle, shared zoom, step cursor).
class ServerCacheChart : public StepChart {
    Q_OBJECT
public:
    enum class Metric {
        BlocksHeld,     ///< blocks held, one series per medium and KV cache group
        StoredRemoved,  ///< blocks stored and removed per step
        HitRate,        ///< the server's prefix-cache hit rate from its /metrics (%)
    };
    ServerCacheChart(SessionController& session, ViewSelection& selection, Metric metric, QWidget* parent = nullptr);

    Metric metric() const { return m_metric; }
    /// Series names in plotting order ("GPU group 0", ...).
    QStringList seriesNames() const;
    /// The points of series `index` over [first, last] as the chart plots them (before downsampling).
    std::vector<trace::SeriesPoint> series(int index, std::int64_t first, std::int64_t last) const;

protected:
    void rebuild() override;
    void forgetSession() override;

private:
    /// Graphs for every series the history has now (BlocksHeld gains one per new place).
    void ensureGraphs();

    Metric m_metric;
    std::vector<QCPGraph*> m_graphs;
};

} // namespace kvscope::gui
