// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gui/views/CursorPlot.h"

#include <cstdint>
#include <utility>

namespace kvscope::gui {

class SessionController;
class ViewSelection;

/// A chart over steps: a step cursor that moves without redrawing the data, horizontal zoom
/// and pan shared through ViewSelection, and a centred message for "nothing to show". Subclasses fill
/// the data of the visible steps in rebuild(): on a new session or growth at once, after zoom, pan or
/// resize once before the next replot.
class StepChart : public CursorPlot {
    Q_OBJECT
public:
    StepChart(SessionController& session, ViewSelection& selection, const QString& title, QWidget* parent = nullptr);

    QSize sizeHint() const override { return {480, 220}; }
    QSize minimumSizeHint() const override { return {200, 120}; }

protected:
    /// Re-reads the session's data over sampledSteps() into the plottables.
    virtual void rebuild() = 0;
    /// A new session replaced the old one: drops what was gathered from it incrementally.
    virtual void forgetSession() {}
    void setMessage(const QString& text);
    /// Points per series: one per pixel (the downsampler keeps each bucket's min and max, so peaks stay).
    std::size_t pointBudget() const;
    /// The steps to read: the visible ones and one beyond each edge, so lines run to the borders.
    std::pair<std::int64_t, std::int64_t> sampledSteps() const;
    /// Steps as stairs while each is wider than two pixels; a plain line through each bucket's min and
    /// max when many share a pixel (the same picture with half the segments).
    QCPGraph::LineStyle seriesLineStyle() const;
    void applyStepRange();
    /// Sets a series' points. A step's value spans [step, step + 1) (stairs to the left), so the session's
    /// last step gets a point at stepCount() holding its value: its stair is as wide as any other and shows
    /// beside the step cursor instead of as a sliver under it at the plot's right edge (the full-session
    /// range runs to stepCount()).
    void setSeries(QCPGraph* graph, QVector<double> keys, QVector<double> values) const;

    void resizeEvent(QResizeEvent* event) override;

    SessionController& m_session;
    ViewSelection& m_selection;

private:
    void moveCursor();

    QCPItemText* m_message;
    bool m_applyingRange = false;
    bool m_rebuildPending = false; ///< zoom, pan or resize changed what to sample
};

} // namespace kvscope::gui
