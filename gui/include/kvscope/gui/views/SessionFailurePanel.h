// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QFrame>

class QLabel;
class QPushButton;

namespace kvscope::gui {

struct LiveFailure;

/// Where a failed live session leaves the user: what failed, the engine's reason (which names the fix),
/// and a button that opens File → New session filled in with the same settings, to change what the reason
/// names and start again. The occupancy map shows it over its area; the window stays usable around it.
class SessionFailurePanel : public QFrame {
    Q_OBJECT
public:
    explicit SessionFailurePanel(QWidget* parent = nullptr);

    void setFailure(const LiveFailure& failure);
    /// With steps to look at, the panel can be put away (Dismiss); over an empty map it stays.
    void setDismissible(bool dismissible);
    QString headline() const;
    QString reason() const;
    QPushButton* newSessionButton() const { return m_newSession; }
    QPushButton* dismissButton() const { return m_dismiss; }

signals:
    void newSessionRequested();
    void dismissed();

private:
    QLabel* m_headline;
    QLabel* m_reason;
    QPushButton* m_newSession;
    QPushButton* m_dismiss;
};

} // namespace kvscope::gui
