// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/views/LayerTableView.h"

#include "kvscope/gui/models/LayerTableModel.h"
#include "kvscope/gui/views/TextCellDelegate.h"
#include "kvscope/gui/session/SessionController.h"
#include "kvscope/gui/session/ViewSelection.h"

#include <QFontMetrics>
#include <QHeaderView>
#include <QJsonDocument>
#include <QJsonObject>

#include <algorithm>

namespace kvscope::gui {

LayerTableView::LayerTableView(SessionController& session, ViewSelection& selection, QWidget* parent)
    : QTableView(parent), m_session(session), m_selection(selection), m_model(new LayerTableModel(this)) {
    setModel(m_model);
    // What the current step changed is bold.
    setItemDelegate(new TextCellDelegate(LayerTableModel::ChangedRole, this));
    setAlternatingRowColors(true);
    setSelectionBehavior(SelectRows);
    setSelectionMode(SingleSelection);
    verticalHeader()->setVisible(false);
    verticalHeader()->setDefaultSectionSize(20);
    horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
    horizontalHeader()->setStretchLastSection(true);
    auto refresh = [this] {
        m_model->setState(m_session.state());
        showSelection(m_selection.selectedLayer());
    };
    connect(&session, &SessionController::stepChanged, this, refresh);
    // Columns fit the contents once per session (and at its last step, where numbers are widest),
    // not on every step: measuring every cell each step cost as much as the rest of a step change.
    connect(&session, &SessionController::sessionLoaded, this, [this, refresh] {
        updateCacheTypes();
        m_model->setState(m_session.timeline().stepCount() > 0
                              ? m_session.timeline().snapshotAt(m_session.timeline().stepCount() - 1)
                              : m_session.state());
        fitColumns();
        refresh();
    });
    connect(&selection, &ViewSelection::selectionChanged, this, &LayerTableView::showSelection);
    // A live session's numbers widen as it grows: refit at power-of-two step counts (early, when
    // types and units first appear) and then every 64 steps.
    connect(&session, &SessionController::sessionGrew, this, [this] {
        updateCacheTypes();
        const std::int64_t steps = m_session.stepCount();
        if (m_model->rowCount() == 0 || (steps & (steps - 1)) == 0 || steps % 64 == 0) {
            fitColumns();
        }
    });
    connect(selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            [this](const QModelIndex& current) { m_selection.setSelectedLayer(current.isValid() ? current.row() : -1); });
    refresh();
}

void LayerTableView::updateCacheTypes() {
    const trace::SessionMetadata& metadata = m_session.metadata();
    if (metadata.cacheKind == m_cacheKind && metadata.cacheSettingsJson == m_cacheSettingsJson) {
        return;
    }
    m_cacheKind = metadata.cacheKind;
    m_cacheSettingsJson = metadata.cacheSettingsJson;
    if (m_cacheKind != "llamacpp") {
        m_model->setLlamaCppTypes({}, {});
        return;
    }
    const QJsonObject settings = QJsonDocument::fromJson(QByteArray::fromStdString(m_cacheSettingsJson)).object();
    m_model->setLlamaCppTypes(settings.value(QStringLiteral("type_k")).toString(QStringLiteral("f16")),
                              settings.value(QStringLiteral("type_v")).toString(QStringLiteral("f16")));
}

void LayerTableView::fitColumns() {
    resizeColumnsToContents();
    // Cells sized while a session starts hold short texts ("0 B", no type yet): keep room for the
    // widest a column will show, so later steps are never elided.
    const QFontMetrics metrics(font());
    const auto atLeast = [&](int column, const QString& sample) {
        setColumnWidth(column, std::max(columnWidth(column), metrics.horizontalAdvance(sample) + 16));
    };
    atLeast(LayerTableModel::Type, QStringLiteral("dynamic_sliding_window"));
    atLeast(LayerTableModel::DeviceBytes, QStringLiteral("999.9 MiB"));
    atLeast(LayerTableModel::HostBytes, QStringLiteral("999.9 MiB"));
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
