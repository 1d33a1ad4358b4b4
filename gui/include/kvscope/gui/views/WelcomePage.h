// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QWidget>

class QVBoxLayout;

namespace kvscope::gui {

/// The page kvscope opens on without a session: the guided tours, the sample sessions, the recent
/// files, and New session / Open, each one click away.
class WelcomePage : public QWidget {
    Q_OBJECT
public:
    explicit WelcomePage(QWidget* parent = nullptr);

    void setRecentFiles(const QStringList& paths);
    /// The sample sessions shown: the *.kvsess files of `folder`.
    void setSampleFolder(const QString& folder);
    /// The folder of the sample sessions: installed ones beside the program, else the source tree's.
    static QString defaultSampleFolder();
    QStringList sampleFiles() const { return m_samples; }

signals:
    void tourRequested(const QString& name);
    void fileRequested(const QString& path);
    void newSessionRequested();
    void openRequested();

private:
    void fillFiles(QVBoxLayout* layout, const QStringList& paths, const QString& none);

    QVBoxLayout* m_sampleList;
    QVBoxLayout* m_recentList;
    QStringList m_samples;
};

} // namespace kvscope::gui
