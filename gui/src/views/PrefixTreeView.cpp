// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/views/PrefixTreeView.h"

#include "kvscope/gui/models/PrefixTreeModel.h"
#include "kvscope/gui/session/SessionController.h"

#include <QHeaderView>

namespace kvscope::gui {

PrefixTreeView::PrefixTreeView(SessionController& session, QWidget* parent)
    : QTreeView(parent), m_session(session), m_model(new PrefixTreeModel(this)) {
    setModel(m_model);
    setAlternatingRowColors(true);
    setUniformRowHeights(true);
    header()->setStretchLastSection(false);
    header()->setSectionResizeMode(PrefixTreeModel::Tokens, QHeaderView::Stretch);
    connect(&session, &SessionController::stepChanged, this, &PrefixTreeView::reload);
    connect(&session, &SessionController::sessionLoaded, this, &PrefixTreeView::reload);
    reload();
}

void PrefixTreeView::reload() {
    m_model->setState(*m_session.state(), m_session.paged());
    expandAll();
}

} // namespace kvscope::gui
