#pragma once

#include <qcustomplot.h>

namespace kvscope::gui {

class SessionController;
class ViewSelection;

// A chart over steps: a buffered step cursor that moves without redrawing the data, horizontal zoom
// and pan shared through ViewSelection, and a centred message for "nothing to show". Subclasses fill
// the data in rebuild() (a new session or growth) and are replotted queued.
class StepChart : public QCustomPlot {
    Q_OBJECT
public:
    StepChart(SessionController& session, ViewSelection& selection, const QString& title, QWidget* parent = nullptr);

    QSize sizeHint() const override { return {480, 220}; }
    QSize minimumSizeHint() const override { return {200, 120}; }

protected:
    // Re-reads the session's data into the plottables.
    virtual void rebuild() = 0;
    void setMessage(const QString& text);
    // Points per series: one per pixel (the downsampler keeps each bucket's min and max, so peaks stay).
    std::size_t pointBudget() const;
    void applyStepRange();

    SessionController& m_session;
    ViewSelection& m_selection;

private:
    void moveCursor();

    QCPItemStraightLine* m_cursor;
    QCPItemText* m_message;
    bool m_applyingRange = false;
};

} // namespace kvscope::gui
