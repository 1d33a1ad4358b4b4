#include "kvscope/gui/LayerTableView.h"

#include "kvscope/gui/LayerTableModel.h"
#include "kvscope/gui/SessionController.h"
#include "kvscope/gui/ViewSelection.h"

#include <QHeaderView>

namespace kvscope::gui {

LayerTableView::LayerTableView(SessionController& session, ViewSelection& selection, QWidget* parent)
    : QTableView(parent), m_session(session), m_selection(selection), m_model(new LayerTableModel(this)) {
    setModel(m_model);
    setAlternatingRowColors(true);
    setSelectionBehavior(SelectRows);
    setSelectionMode(SingleSelection);
    verticalHeader()->setVisible(false);
    verticalHeader()->setDefaultSectionSize(20);
    horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    horizontalHeader()->setStretchLastSection(true);
    auto refresh = [this] {
        m_model->setState(m_session.state());
        showSelection(m_selection.selectedLayer());
    };
    connect(&session, &SessionController::stepChanged, this, refresh);
    connect(&session, &SessionController::sessionLoaded, this, refresh);
    connect(&selection, &ViewSelection::selectionChanged, this, &LayerTableView::showSelection);
    connect(selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            [this](const QModelIndex& current) { m_selection.setSelectedLayer(current.isValid() ? current.row() : -1); });
    refresh();
}

void LayerTableView::showSelection(int layer) {
    if (layer < 0 || layer >= m_model->rowCount()) {
        return;
    }
    if (currentIndex().row() != layer) {
        setCurrentIndex(m_model->index(layer, 0));
    }
}

} // namespace kvscope::gui
