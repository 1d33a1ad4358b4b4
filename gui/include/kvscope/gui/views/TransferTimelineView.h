// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <qcustomplot.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace kvscope::gui {

class GanttPlottable;
class SessionController;

/// Offloading caches over time: a prefetch lane (side stream), an offload lane (compute stream) and a
/// compute lane per layer, on the session clock, labelled measured or modeled. Follows the current
/// step's time span; wheel zooms, drag pans, double-click returns to the step.
class TransferTimelineView : public QCustomPlot {
    Q_OBJECT
public:
    explicit TransferTimelineView(SessionController& session, QWidget* parent = nullptr);

    int laneCount() const;
    std::size_t boxCount() const;
    /// [begin, end] in ns of a step's timed events; begin > end when the step has none.
    std::pair<double, double> stepSpan(std::int64_t step) const;
    GanttPlottable* gantt() const { return m_gantt; }
    QSize sizeHint() const override { return {900, 260}; }
    QSize minimumSizeHint() const override { return {240, 120}; }

protected:
    void mouseDoubleClickEvent(QMouseEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;

private:
    void rebuild(bool fromScratch);
    void showStep();
    void updateLabels();

    SessionController& m_session;
    GanttPlottable* m_gantt;
    QCPTextElement* m_title;
    QCPItemText* m_message;
    std::size_t m_scannedSpans = 0;
    std::vector<std::pair<std::int64_t, std::int64_t>> m_stepSpans;
    std::int64_t m_origin = 0; ///< session clock of the first timed event: labels count from it
    bool m_measured = false;
    bool m_modeled = false;
};

} // namespace kvscope::gui
