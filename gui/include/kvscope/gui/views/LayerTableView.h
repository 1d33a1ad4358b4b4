// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QTableView>
#include <string>

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
    /// Tells the model the session's llama.cpp K and V types when its metadata names new ones (a live session's
    /// come with its first steps).
    void updateCacheTypes();

    SessionController& m_session;
    ViewSelection& m_selection;
    LayerTableModel* m_model;
    std::string m_cacheKind;
    std::string m_cacheSettingsJson;
};

} // namespace kvscope::gui
