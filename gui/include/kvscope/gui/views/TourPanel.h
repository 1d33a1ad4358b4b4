// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gui/tours/TourGuide.h"

#include <QWidget>

class QLabel;
class QListWidget;

namespace kvscope::gui {

class SessionController;

/// A guided tour's explanation beside its session: the tour's title and summary, then the notes that
/// apply up to the current step, the newest in front ("step 12: the window is full; ..."). Clicking a
/// note goes to its step. Follows the session as it grows and as the user steps.
class TourPanel : public QWidget {
    Q_OBJECT
public:
    explicit TourPanel(SessionController& session, QWidget* parent = nullptr);

    /// Follows `tour` over the session from now on (null: none).
    void setTour(const Tour* tour);
    const TourGuide& guide() const { return m_guide; }
    /// The notes shown, oldest first (for tests and screenshots).
    QStringList shownNotes() const;
    QListWidget* noteList() const { return m_notes; }

private:
    void refresh();

    SessionController& m_session;
    TourGuide m_guide;
    QLabel* m_title;
    QLabel* m_summary;
    QListWidget* m_notes;
    QLabel* m_hint;
};

} // namespace kvscope::gui
