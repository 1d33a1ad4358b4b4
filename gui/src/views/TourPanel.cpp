// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/views/TourPanel.h"

#include "kvscope/gui/session/SessionController.h"

#include <QFont>
#include <QLabel>
#include <QListWidget>
#include <QVBoxLayout>

namespace kvscope::gui {

TourPanel::TourPanel(SessionController& session, QWidget* parent)
    : QWidget(parent), m_session(session), m_title(new QLabel), m_summary(new QLabel),
      m_notes(new QListWidget), m_hint(new QLabel) {
    auto* layout = new QVBoxLayout(this);
    QFont bold = m_title->font();
    bold.setBold(true);
    bold.setPointSizeF(bold.pointSizeF() * 1.15);
    m_title->setFont(bold);
    m_title->setWordWrap(true);
    m_summary->setWordWrap(true);
    m_hint->setWordWrap(true);
    m_hint->setStyleSheet(QStringLiteral("color: palette(mid);"));
    m_notes->setWordWrap(true);
    m_notes->setSelectionMode(QAbstractItemView::SingleSelection);
    layout->addWidget(m_title);
    layout->addWidget(m_summary);
    layout->addWidget(m_notes, 1);
    layout->addWidget(m_hint);
    connect(m_notes, &QListWidget::itemClicked, this, [this](QListWidgetItem* item) {
        m_session.setCurrentStep(item->data(Qt::UserRole).toLongLong());
    });
    connect(&m_session, &SessionController::sessionLoaded, this, [this] {
        // A new session of the same tour (or none) is read from its first step again.
        m_guide.setTour(m_guide.tour());
        refresh();
    });
    connect(&m_session, &SessionController::sessionGrew, this, &TourPanel::refresh);
    connect(&m_session, &SessionController::stepChanged, this, &TourPanel::refresh);
    connect(&m_session, &SessionController::liveStateChanged, this, &TourPanel::refresh);
}

void TourPanel::setTour(const Tour* tour) {
    m_guide.setTour(tour);
    m_title->setText(tour ? tour->title : QString());
    m_summary->setText(tour ? tour->summary : QString());
    refresh();
}

QStringList TourPanel::shownNotes() const {
    QStringList notes;
    for (int row = 0; row < m_notes->count(); ++row) {
        notes << m_notes->item(row)->text();
    }
    return notes;
}

void TourPanel::refresh() {
    m_notes->clear();
    if (!m_guide.tour()) {
        m_hint->clear();
        return;
    }
    const bool finished = m_session.mode() != SessionController::Mode::Live || m_session.liveFinished();
    m_guide.update(m_session.timeline(), finished);
    const std::int64_t step = m_session.currentStep();
    const std::vector<std::size_t> notes = m_guide.notesAt(step);
    for (const std::size_t note : notes) {
        const std::int64_t at = *m_guide.triggerSteps()[note];
        auto* item = new QListWidgetItem(
            (at == 0 ? tr("Prefill: %1") : tr("Step %1: %2").arg(at)).arg(m_guide.textOf(note)), m_notes);
        item->setData(Qt::UserRole, QVariant::fromValue<qlonglong>(at));
        item->setToolTip(tr("Go to step %1").arg(at));
    }
    if (!notes.empty()) {
        // The newest note is the one that explains what is on screen now.
        QListWidgetItem* newest = m_notes->item(m_notes->count() - 1);
        QFont font = newest->font();
        font.setBold(true);
        newest->setFont(font);
        m_notes->setCurrentItem(newest);
        m_notes->scrollToItem(newest);
    }
    const std::size_t ahead = m_guide.notesAfter(step);
    m_hint->setText(ahead > 0 ? tr("Step forward (→ or Space to play) for %n more note(s).", nullptr,
                                   static_cast<int>(ahead))
                              : tr("That is the whole tour. Help → Welcome lists the others."));
}

} // namespace kvscope::gui
