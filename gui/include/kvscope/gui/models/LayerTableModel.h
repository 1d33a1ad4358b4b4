// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/trace/StepState.h"

#include <QAbstractTableModel>

#include <memory>

namespace kvscope::gui {

/// One row per cache layer of a StepState snapshot: the layer table.
class LayerTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column {
        Layer,
        Type,
        SeqLength,
        Stored,
        KvLength,
        KvOffset,
        Window,
        Residual,
        Quantized,
        Residency,
        DeviceBytes,
        HostBytes,
        ColumnCount
    };
    /// Qt::UserRole gives the raw number behind a cell (for sorting and tests).
    static constexpr int RawValueRole = Qt::UserRole;
    /// True where the cell's value differs from the step shown before (those cells are bold).
    static constexpr int ChangedRole = Qt::UserRole + 1;

    explicit LayerTableModel(QObject* parent = nullptr);

    /// Takes a new snapshot: same layer count -> dataChanged, otherwise a reset.
    void setState(std::shared_ptr<const trace::StepState> state);
    const trace::StepState* state() const { return m_state.get(); }
    /// A session of llama.cpp's cache (its layers trace as dynamic ones) with these K and V types, or none (empty):
    /// its layers are named "llamacpp q8_0/q4_0" (K/V) and, where a type quantises, show their quantized tokens.
    void setLlamaCppTypes(const QString& typeK, const QString& typeV);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    QVariant display(const trace::LayerState& layer, int row, int column) const;
    QVariant raw(const trace::LayerState& layer, int row, int column) const;
    bool changed(const trace::LayerState& layer, int row, int column) const;

    std::shared_ptr<const trace::StepState> m_state;
    std::shared_ptr<const trace::StepState> m_previous; ///< of the step shown before: changed cells are bold
    QString m_llamaCppLabel;     ///< the Type of a llama.cpp cache's layers; empty for other caches
    bool m_llamaCppQuantises = false;
};

} // namespace kvscope::gui
