// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QToolBar>

class QAction;
class QComboBox;
class QLabel;
class QSlider;
class QTimer;

namespace kvscope::gui {

class SessionController;

/// Transport over steps: to start, step back, play/pause at a speed, step, to end, and a scrub
/// slider; shortcuts Home, Left, Space, Right, End. Playing past the end of a live run asks the engine
/// for more tokens; playing stops at the end of a finished session.
class TransportBar : public QToolBar {
    Q_OBJECT
public:
    explicit TransportBar(SessionController& session, QWidget* parent = nullptr);

    QAction* toStartAction() const { return m_toStart; }
    QAction* stepBackAction() const { return m_stepBack; }
    QAction* playAction() const { return m_play; }
    QAction* stepAction() const { return m_step; }
    QAction* toEndAction() const { return m_toEnd; }
    QSlider* slider() const { return m_slider; }
    QComboBox* speedBox() const { return m_speed; }
    bool playing() const;
    void setPlaying(bool playing);
    /// Steps per second while playing.
    double speed() const;

private:
    void tick();
    void refresh();

    SessionController& m_session;
    QAction* m_toStart;
    QAction* m_stepBack;
    QAction* m_play;
    QAction* m_step;
    QAction* m_toEnd;
    QSlider* m_slider;
    QComboBox* m_speed;
    QLabel* m_position;
    QTimer* m_timer;
};

} // namespace kvscope::gui
