// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QWidget>

#include <string>

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QTableView;

namespace kvscope::gui {

class EventLogModel;
class SessionController;
class ViewSelection;

/// The current step's events, filterable by kind, text and the selected layer, each with the sentence
/// saying why it happened (teaching mode).
class EventLogView : public QWidget {
    Q_OBJECT
public:
    EventLogView(SessionController& session, ViewSelection& selection, QWidget* parent = nullptr);

    EventLogModel* model() const { return m_model; }
    QLineEdit* filterEdit() const { return m_text; }
    QComboBox* kindFilter() const { return m_kind; }
    QCheckBox* layerOnly() const { return m_layerOnly; }

private:
    void reload();
    void applyFilter();

    SessionController& m_session;
    ViewSelection& m_selection;
    EventLogModel* m_model;
    QTableView* m_table;
    QLineEdit* m_text;
    QComboBox* m_kind;
    QCheckBox* m_layerOnly;
    QLabel* m_count;
    /// The metadata cache_settings the model's press was read from.
    std::string m_cacheSettingsJson;
};

} // namespace kvscope::gui
