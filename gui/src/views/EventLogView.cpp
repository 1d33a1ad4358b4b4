// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/views/EventLogView.h"

#include "kvscope/gui/models/EventLogModel.h"
#include "kvscope/gui/models/SessionTokens.h"
#include "kvscope/gui/session/SessionController.h"
#include "kvscope/gui/views/TextCellDelegate.h"
#include "kvscope/gui/session/ViewSelection.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QTableView>
#include <QVBoxLayout>

namespace kvscope::gui {

EventLogView::EventLogView(SessionController& session, ViewSelection& selection, QWidget* parent)
    : QWidget(parent), m_session(session), m_selection(selection), m_model(new EventLogModel(this)),
      m_table(new QTableView(this)), m_text(new QLineEdit(this)), m_kind(new QComboBox(this)),
      m_layerOnly(new QCheckBox(tr("Selected layer only"), this)), m_count(new QLabel(this)) {
    m_text->setPlaceholderText(tr("Filter: text in the event, its details or why…"));
    m_text->setClearButtonEnabled(true);
    m_kind->addItem(tr("All kinds"), -1);
    for (std::size_t kind = 0; kind < trace::kEventKindCount; ++kind) {
        m_kind->addItem(QString::fromUtf8(trace::toString(static_cast<trace::EventKind>(kind))), static_cast<int>(kind));
    }
    auto* filters = new QHBoxLayout;
    filters->setContentsMargins(0, 0, 0, 0);
    filters->addWidget(m_text, 1);
    filters->addWidget(m_kind);
    filters->addWidget(m_layerOnly);
    filters->addWidget(m_count);
    m_model->setTokens([this](std::int64_t position) {
        return SessionTokens::pieceAt(m_session.metadata(), m_session.timeline(), position, &m_session.speculation());
    });
    m_model->setPagedHistory(&m_session.paged());
    m_table->setModel(m_model);
    m_table->setItemDelegate(new TextCellDelegate(-1, m_table));
    m_table->setAlternatingRowColors(true);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setWordWrap(false);
    m_table->verticalHeader()->setVisible(false);
    m_table->verticalHeader()->setDefaultSectionSize(20);
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
    m_table->setColumnWidth(EventLogModel::Sequence, 60);
    m_table->setColumnWidth(EventLogModel::Layer, 46);
    m_table->setColumnWidth(EventLogModel::Kind, 96);
    m_table->setColumnWidth(EventLogModel::Summary, 330);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(filters);
    layout->addWidget(m_table);

    connect(m_text, &QLineEdit::textChanged, this, &EventLogView::applyFilter);
    connect(m_kind, &QComboBox::currentIndexChanged, this, &EventLogView::applyFilter);
    connect(m_layerOnly, &QCheckBox::toggled, this, &EventLogView::applyFilter);
    connect(&selection, &ViewSelection::selectionChanged, this, [this] {
        if (m_layerOnly->isChecked()) {
            applyFilter();
        }
    });
    connect(&session, &SessionController::stepChanged, this, &EventLogView::reload);
    connect(&session, &SessionController::sessionLoaded, this, &EventLogView::reload);
    reload();
}

void EventLogView::reload() {
    // A live run's metadata arrives with its first events, after sessionLoaded: read the press when it changes.
    if (m_session.metadata().cacheSettingsJson != m_cacheSettingsJson) {
        m_cacheSettingsJson = m_session.metadata().cacheSettingsJson;
        m_model->setPress(config::PressSettings::fromCacheSettings(m_cacheSettingsJson));
    }
    m_model->setEvents(m_session.timeline().eventsOfStep(m_session.currentStep()).span(), m_session.state());
    m_count->setText(tr("%1 of %2").arg(m_model->rowCount()).arg(m_model->totalCount()));
}

void EventLogView::applyFilter() {
    const int kind = m_kind->currentData().toInt();
    m_model->setFilter(kind >= 0 ? std::optional(static_cast<trace::EventKind>(kind)) : std::nullopt,
                       m_layerOnly->isChecked() ? m_selection.selectedLayer() : -1, m_text->text());
    m_count->setText(tr("%1 of %2").arg(m_model->rowCount()).arg(m_model->totalCount()));
}

} // namespace kvscope::gui
