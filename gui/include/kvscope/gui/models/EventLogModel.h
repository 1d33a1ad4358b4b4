// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gui/models/EventExplainer.h"
#include "kvscope/trace/Event.h"
#include "kvscope/trace/StepState.h"

#include <QAbstractTableModel>

#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace kvscope::gui {

/// The events of one step, each with a summary and the sentence saying why it happened.
class EventLogModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Sequence, Layer, Kind, Summary, Why, ColumnCount };
    /// Qt::UserRole on any column: the event's EventKind as an int (the kind filter uses it).
    static constexpr int KindRole = Qt::UserRole;

    explicit EventLogModel(QObject* parent = nullptr);

    /// Copies the step's events (a reset: a step's events are not a continuation of the last step's).
    void setEvents(std::span<const trace::Event> events, std::shared_ptr<const trace::StepState> state);
    /// Shows only events of that kind (nullopt: all), of that layer or cache-wide (-1: all layers), and
    /// whose kind, summary or explanation contains the text (case-insensitive).
    void setFilter(std::optional<trace::EventKind> kind, int layer, const QString& text);
    /// Where explanations find the text of the tokens an event concerns (quoted in the Why column).
    void setTokens(EventExplainer::TokenLookup tokens);
    /// The session's cache press, which the Why column names in its compressions (nullopt: none recorded).
    void setPress(std::optional<config::PressSettings> press);
    /// A serving session's history, which the Why column reads for paged events (null: none). Must outlive
    /// the model or be reset first.
    void setPagedHistory(const PagedHistory* paged);
    const trace::Event* eventAt(int row) const;
    std::size_t totalCount() const { return m_events.size(); }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    void applyFilter();
    bool accepts(const trace::Event& event) const;

    std::vector<trace::Event> m_events;
    std::vector<std::size_t> m_visible; ///< indices into m_events that pass the filter
    std::optional<trace::EventKind> m_kind;
    int m_layer = -1;
    QString m_text;
    std::shared_ptr<const trace::StepState> m_state;
    EventExplainer::TokenLookup m_tokens;
    std::optional<config::PressSettings> m_press;
    const PagedHistory* m_paged = nullptr;
};

} // namespace kvscope::gui
