// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QTableView>

namespace kvscope::gui {

class LayerTableModel;
class SessionController;
class ViewSelection;

/// The layer table at the current step; its selected row is the shared selected layer.
class LayerTableView : public QTableView {
    Q_OBJECT
public:
    LayerTableView(SessionController& session, ViewSelection& selection, QWidget* parent = nullptr);


private:
    void showSelection(int layer);
    /// Columns fit their contents, with room for the widest type name and byte count.
    void fitColumns();

    SessionController& m_session;
    ViewSelection& m_selection;
    LayerTableModel* m_model;
};

} // namespace kvscope::gui
