// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QTreeView>

namespace kvscope::gui {

class PrefixTreeModel;
class SessionController;

/// The prefix cache of a serving session at the current step as a tree (PrefixTreeModel): the hash chain
/// of cached blocks, each node its tokens as text, block(s), reference count and who cached it; the path a
/// prefix hit reused this step is highlighted and expanded.
class PrefixTreeView : public QTreeView {
    Q_OBJECT
public:
    explicit PrefixTreeView(SessionController& session, QWidget* parent = nullptr);
    PrefixTreeModel* treeModel() const { return m_model; }

private:
    void reload();

    SessionController& m_session;
    PrefixTreeModel* m_model;
};

} // namespace kvscope::gui
