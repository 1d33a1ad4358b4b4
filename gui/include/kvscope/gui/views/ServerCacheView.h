// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QWidget>

class QLabel;
class QTreeView;

namespace kvscope::trace {
struct ServerCacheState;
}

namespace kvscope::gui {

class ServerCacheChart;
class ServerPrefixTreeModel;
class SessionController;
class ViewSelection;

/// An attached server's cache (kvscope --attach): a line saying where the stream stands (server, messages,
/// lost and refused ones, blocks held per medium, the hit rate), the stored blocks as a prefix tree with their
/// text at the current step (ServerPrefixTreeModel), and charts over the steps (ServerCacheChart). Shown in
/// place of the per-layer views while such a session is open.
class ServerCacheView : public QWidget {
    Q_OBJECT
public:
    ServerCacheView(SessionController& session, ViewSelection& selection, QWidget* parent = nullptr);

    ServerPrefixTreeModel* treeModel() const { return m_model; }
    QTreeView* tree() const { return m_tree; }
    QString statusText() const;
    /// The status line for a state: pure, for tests.
    static QString describe(const trace::ServerCacheState& state, const QString& server);

private:
    void reload();

    SessionController& m_session;
    QLabel* m_status;
    QTreeView* m_tree;
    ServerPrefixTreeModel* m_model;
};

} // namespace kvscope::gui
