// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/window/TransportBar.h"

#include "kvscope/gui/session/SessionController.h"

#include <QAction>
#include <QComboBox>
#include <QLabel>
#include <QSignalBlocker>
#include <QSlider>
#include <QStyle>
#include <QTimer>

namespace kvscope::gui {

TransportBar::TransportBar(SessionController& session, QWidget* parent)
    : QToolBar(tr("Transport"), parent), m_session(session), m_slider(new QSlider(Qt::Horizontal, this)),
      m_speed(new QComboBox(this)), m_position(new QLabel(this)), m_timer(new QTimer(this)) {
    setObjectName(QStringLiteral("transport"));
    QStyle* style = this->style();
    m_toStart = addAction(style->standardIcon(QStyle::SP_MediaSkipBackward), tr("To start"), &session,
                          &SessionController::goToStart);
    m_toStart->setShortcut(Qt::Key_Home);
    m_stepBack = addAction(style->standardIcon(QStyle::SP_MediaSeekBackward), tr("Step back"), &session,
                           &SessionController::stepBackward);
    m_stepBack->setShortcut(Qt::Key_Left);
    m_play = addAction(style->standardIcon(QStyle::SP_MediaPlay), tr("Play"));
    m_play->setCheckable(true);
    m_play->setShortcut(Qt::Key_Space);
    m_step = addAction(style->standardIcon(QStyle::SP_MediaSeekForward), tr("Step"), &session,
                       &SessionController::stepForward);
    m_step->setShortcut(Qt::Key_Right);
    m_toEnd = addAction(style->standardIcon(QStyle::SP_MediaSkipForward), tr("To end"), &session,
                        &SessionController::goToEnd);
    m_toEnd->setShortcut(Qt::Key_End);
    for (QAction* action : {m_toStart, m_stepBack, m_play, m_step, m_toEnd}) {
        action->setToolTip(QStringLiteral("%1 (%2)").arg(action->text(), action->shortcut().toString()));
    }
    for (const int stepsPerSecond : {1, 2, 5, 10, 25, 60}) {
        m_speed->addItem(tr("%1 steps/s").arg(stepsPerSecond), stepsPerSecond);
    }
    m_speed->setCurrentIndex(3);
    m_speed->setToolTip(tr("Playback speed"));
    addWidget(m_speed);
    addSeparator();
    m_slider->setMinimumWidth(240);
    m_slider->setToolTip(tr("Scrub over steps"));
    addWidget(m_slider);
    m_position->setMinimumWidth(130);
    m_position->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
    addWidget(m_position);

    connect(m_play, &QAction::toggled, this, &TransportBar::setPlaying);
    connect(m_speed, &QComboBox::currentIndexChanged, this, [this] {
        m_timer->setInterval(static_cast<int>(1000.0 / speed()));
    });
    m_timer->setInterval(static_cast<int>(1000.0 / speed()));
    connect(m_timer, &QTimer::timeout, this, &TransportBar::tick);
    connect(m_slider, &QSlider::valueChanged, &session, [this](int value) { m_session.setCurrentStep(value); });
    connect(&session, &SessionController::stepChanged, this, &TransportBar::refresh);
    connect(&session, &SessionController::sessionGrew, this, &TransportBar::refresh);
    connect(&session, &SessionController::sessionLoaded, this, [this] {
        setPlaying(false);
        refresh();
    });
    refresh();
}

bool TransportBar::playing() const { return m_timer->isActive(); }

double TransportBar::speed() const { return std::max(1, m_speed->currentData().toInt()); }

void TransportBar::setPlaying(bool playing) {
    if (playing == this->playing()) {
        return;
    }
    if (playing) {
        // Playing from the end of a finished session starts over, as media players do.
        if (m_session.currentStep() + 1 >= m_session.stepCount() && m_session.liveFinished()) {
            m_session.goToStart();
        }
        m_timer->start();
    } else {
        m_timer->stop();
    }
    const QSignalBlocker blocker(m_play);
    m_play->setChecked(playing);
    m_play->setText(playing ? tr("Pause") : tr("Play"));
    m_play->setIcon(style()->standardIcon(playing ? QStyle::SP_MediaPause : QStyle::SP_MediaPlay));
}

void TransportBar::tick() {
    const bool atEnd = m_session.currentStep() + 1 >= m_session.stepCount();
    if (atEnd && m_session.liveFinished()) {
        setPlaying(false);
        return;
    }
    m_session.stepForward();
}

void TransportBar::refresh() {
    const QSignalBlocker blocker(m_slider);
    const qint64 count = m_session.stepCount();
    m_slider->setRange(0, static_cast<int>(std::max<qint64>(count - 1, 0)));
    m_slider->setValue(static_cast<int>(m_session.currentStep()));
    m_slider->setEnabled(count > 1);
    m_position->setText(count > 0 ? tr("step %1 / %2").arg(m_session.currentStep()).arg(count - 1) : tr("no steps"));
    const bool any = count > 0;
    m_toStart->setEnabled(any);
    m_stepBack->setEnabled(any);
    m_play->setEnabled(any);
    m_step->setEnabled(any);
    m_toEnd->setEnabled(any);
}

} // namespace kvscope::gui
