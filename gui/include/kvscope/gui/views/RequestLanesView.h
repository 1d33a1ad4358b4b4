// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QWidget>
#include <cstdint>

namespace kvscope::gui {

class SessionController;
class ViewSelection;

/// A serving session's requests over steps: one lane per request (arrival order, its colour), each step
/// drawn as what the request did in it (waiting, a prefill chunk, a decode, running but left out by the
/// budget, preempted, finished) with the token it produced written in when it fits; the current step
/// marked. Hovering a cell says what the request did and with which tokens; clicking selects the request
/// and moves to that step. Reads only the session's PagedHistory.
class RequestLanesView : public QWidget {
    Q_OBJECT
public:
    RequestLanesView(SessionController& session, ViewSelection& selection, QWidget* parent = nullptr);

    /// The request lane under a widget y (-1 outside) and the step under a widget x (-1 outside).
    int laneAt(int y) const;
    std::int64_t stepAt(int x) const;
    /// What hovering the cell says.
    QString describe(int lane, std::int64_t step) const;
    /// The text written in a cell (the token the step produced), empty when none.
    QString cellText(int lane, std::int64_t step) const;
    QSize sizeHint() const override { return {640, 200}; }
    QSize minimumSizeHint() const override { return {240, 80}; }

protected:
    void paintEvent(QPaintEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;

private:
    QRect lanesRect() const;

    SessionController& m_session;
    ViewSelection& m_selection;
};

} // namespace kvscope::gui
