// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gui/views/StepChart.h"
#include "kvscope/trace/SeriesDownsampler.h"

#include <vector>

namespace kvscope::gui {

/// One chart of a serving session's metrics over steps, read from the session's PagedHistory (live and
/// replayed alike), in the chart style of the other step charts (PlotStyle, shared zoom, step cursor).
class ServingMetricsChart : public StepChart {
    Q_OBJECT
public:
    enum class Metric {
        PoolUsage,     ///< blocks held, against the pool's size
        HitRate,       ///< prefix hit rate in percent: cumulative, and of each step's admissions
        Evictions,     ///< evictions and preemptions per step
        TokensPerStep, ///< tokens computed per step, against the budget (max_num_batched_tokens)
    };
    ServingMetricsChart(SessionController& session, ViewSelection& selection, Metric metric,
                        QWidget* parent = nullptr);

    Metric metric() const { return m_metric; }
    /// The points of series `index` over [first, last] as the chart plots them (before downsampling).
    std::vector<trace::SeriesPoint> series(int index, std::int64_t first, std::int64_t last) const;
    int seriesCount() const { return static_cast<int>(m_graphs.size()); }

protected:
    void rebuild() override;

private:
    Metric m_metric;
    std::vector<QCPGraph*> m_graphs;
};

} // namespace kvscope::gui
