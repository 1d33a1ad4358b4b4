// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/models/EventLogModel.h"

#include "kvscope/gui/models/EventExplainer.h"

namespace kvscope::gui {

EventLogModel::EventLogModel(QObject* parent)
    : QAbstractTableModel(parent), m_state(std::make_shared<const trace::StepState>()) {}

void EventLogModel::setEvents(std::span<const trace::Event> events, std::shared_ptr<const trace::StepState> state) {
    beginResetModel();
    m_events.assign(events.begin(), events.end());
    m_state = state ? std::move(state) : std::make_shared<const trace::StepState>();
    applyFilter();
    endResetModel();
}

void EventLogModel::setFilter(std::optional<trace::EventKind> kind, int layer, const QString& text) {
    beginResetModel();
    m_kind = kind;
    m_layer = layer;
    m_text = text.trimmed();
    applyFilter();
    endResetModel();
}

void EventLogModel::setTokens(EventExplainer::TokenLookup tokens) {
    beginResetModel();
    m_tokens = std::move(tokens);
    applyFilter();
    endResetModel();
}

void EventLogModel::setPress(std::optional<config::PressSettings> press) {
    beginResetModel();
    m_press = std::move(press);
    applyFilter();
    endResetModel();
}

void EventLogModel::setPagedHistory(const PagedHistory* paged) {
    beginResetModel();
    m_paged = paged;
    applyFilter();
    endResetModel();
}

bool EventLogModel::accepts(const trace::Event& event) const {
    if (m_kind && event.kind() != *m_kind) {
        return false;
    }
    if (m_layer >= 0 && event.layer >= 0 && event.layer != m_layer) {
        return false;
    }
    if (m_text.isEmpty()) {
        return true;
    }
    return QString::fromUtf8(trace::toString(event.kind())).contains(m_text, Qt::CaseInsensitive) ||
           EventExplainer::summary(event).contains(m_text, Qt::CaseInsensitive) ||
           EventExplainer::why(event, *m_state, m_tokens, m_press, m_paged).contains(m_text, Qt::CaseInsensitive);
}

void EventLogModel::applyFilter() {
    m_visible.clear();
    for (std::size_t index = 0; index < m_events.size(); ++index) {
        if (accepts(m_events[index])) {
            m_visible.push_back(index);
        }
    }
}

const trace::Event* EventLogModel::eventAt(int row) const {
    return row >= 0 && row < rowCount() ? &m_events[m_visible[static_cast<std::size_t>(row)]] : nullptr;
}

int EventLogModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(m_visible.size());
}

int EventLogModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant EventLogModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) {
        return {};
    }
    const trace::Event& event = *eventAt(index.row());
    if (role == KindRole) {
        return static_cast<int>(event.kind());
    }
    if (role == Qt::ToolTipRole && (index.column() == Why || index.column() == Summary)) {
        return EventExplainer::why(event, *m_state, m_tokens, m_press, m_paged);
    }
    if (role != Qt::DisplayRole) {
        return {};
    }
    switch (index.column()) {
    case Sequence:
        return qulonglong(event.sequence);
    case Layer:
        return event.layer >= 0 ? QVariant(event.layer) : QVariant(QStringLiteral("all"));
    case Kind:
        return QString::fromUtf8(trace::toString(event.kind()));
    case Summary:
        return EventExplainer::summary(event);
    case Why:
        return EventExplainer::why(event, *m_state, m_tokens, m_press, m_paged);
    default:
        return {};
    }
}

QVariant EventLogModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole || section < 0 || section >= ColumnCount) {
        return QAbstractTableModel::headerData(section, orientation, role);
    }
    static const char* const names[ColumnCount] = {"#", "Layer", "Event", "What", "Why"};
    return tr(names[section]);
}

} // namespace kvscope::gui
