// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/views/SessionFailurePanel.h"

#include "kvscope/gui/session/SessionController.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

namespace kvscope::gui {

SessionFailurePanel::SessionFailurePanel(QWidget* parent)
    : QFrame(parent), m_headline(new QLabel(this)), m_reason(new QLabel(this)),
      m_newSession(new QPushButton(tr("New session with these settings…"), this)),
      m_dismiss(new QPushButton(tr("Dismiss"), this)) {
    setObjectName(QStringLiteral("sessionFailure"));
    // Painted over the occupancy map: an opaque, bordered card, so the map's rows do not show through.
    setAutoFillBackground(true);
    setStyleSheet(QStringLiteral(
        "#sessionFailure { background: #fff6f4; border: 1px solid #d9a49b; border-radius: 6px; }"
        "#sessionFailure QLabel { background: transparent; border: none; }"));
    QFont bold = m_headline->font();
    bold.setBold(true);
    bold.setPointSizeF(bold.pointSizeF() * 1.1);
    m_headline->setFont(bold);
    m_headline->setWordWrap(true);
    m_reason->setWordWrap(true);
    m_reason->setTextFormat(Qt::PlainText);
    // The reason often names an option and a value to type: let it be selected and copied.
    m_reason->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto* hint =
        new QLabel(tr("Change what the message names and start again; the window keeps working."), this);
    hint->setWordWrap(true);
    hint->setStyleSheet(QStringLiteral("color: #5b5b66;"));
    m_newSession->setToolTip(tr("File → New session, filled in with this session's settings"));
    m_dismiss->setToolTip(tr("Put this message away and look at the steps that ran"));

    auto* buttons = new QHBoxLayout;
    buttons->addWidget(m_newSession);
    buttons->addWidget(m_dismiss);
    buttons->addStretch(1);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(16, 12, 16, 12);
    layout->setSpacing(8);
    layout->addWidget(m_headline);
    layout->addWidget(m_reason);
    layout->addWidget(hint);
    layout->addLayout(buttons);
    setDismissible(false);

    connect(m_newSession, &QPushButton::clicked, this, &SessionFailurePanel::newSessionRequested);
    connect(m_dismiss, &QPushButton::clicked, this, [this] {
        hide();
        Q_EMIT dismissed();
    });
}

void SessionFailurePanel::setFailure(const LiveFailure& failure) {
    m_headline->setText(failure.headline());
    m_reason->setText(failure.reason);
}

void SessionFailurePanel::setDismissible(bool dismissible) {
    m_dismiss->setVisible(dismissible);
}

QString SessionFailurePanel::headline() const {
    return m_headline->text();
}

QString SessionFailurePanel::reason() const {
    return m_reason->text();
}

} // namespace kvscope::gui
