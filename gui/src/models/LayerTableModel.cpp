// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/models/LayerTableModel.h"

#include "kvscope/gui/models/EventExplainer.h"
#include "kvscope/trace/LayerKind.h"

#include <QFont>

namespace kvscope::gui {

LayerTableModel::LayerTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void LayerTableModel::setState(std::shared_ptr<const trace::StepState> state) {
    const int oldRows = rowCount();
    const int newRows = state ? static_cast<int>(state->layers.size()) : 0;
    if (oldRows != newRows) {
        beginResetModel();
        m_previous = std::move(m_state);
        m_state = std::move(state);
        endResetModel();
        return;
    }
    m_previous = std::move(m_state);
    m_state = std::move(state);
    if (newRows > 0) {
        Q_EMIT dataChanged(index(0, 0), index(newRows - 1, ColumnCount - 1));
    }
}

void LayerTableModel::setLlamaCppTypes(const QString& typeK, const QString& typeV) {
    m_llamaCppLabel = typeK.isEmpty() ? QString() : tr("llamacpp %1/%2").arg(typeK, typeV);
    const auto quantises = [](const QString& type) {
        return !type.isEmpty() && type != QLatin1String("f32") && type != QLatin1String("f16") &&
               type != QLatin1String("bf16");
    };
    m_llamaCppQuantises = quantises(typeK) || quantises(typeV);
    if (rowCount() > 0) {
        Q_EMIT dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
    }
}

int LayerTableModel::rowCount(const QModelIndex& parent) const {
    if (parent.isValid() || !m_state) {
        return 0;
    }
    return static_cast<int>(m_state->layers.size());
}

int LayerTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant LayerTableModel::raw(const trace::LayerState& layer, int row, int column) const {
    switch (column) {
    case Layer:
        return row;
    case Type:
        return static_cast<int>(layer.kind);
    case SeqLength:
        return qlonglong(layer.seqLength);
    case Stored:
        return qlonglong(layer.storedTokens);
    case KvLength:
        return qlonglong(layer.kvLength);
    case KvOffset:
        return qlonglong(layer.kvOffset);
    case Window:
        return qlonglong(layer.windowStart);
    case Residual:
        return qlonglong(layer.residualTokens);
    case Quantized:
        return qlonglong(layer.quantizedTokens);
    case Residency:
        return static_cast<int>(layer.residency);
    case DeviceBytes:
        return qlonglong(layer.bytesDevice);
    case HostBytes:
        return qlonglong(layer.bytesHost);
    default:
        return {};
    }
}

QVariant LayerTableModel::display(const trace::LayerState& layer, int row, int column) const {
    // llama.cpp's layers trace as dynamic ones; every token they store is quantised as it comes.
    const bool llamaCpp = layer.kind == trace::LayerKind::Dynamic && !m_llamaCppLabel.isEmpty();
    const bool quantized = layer.kind == trace::LayerKind::Quantized || (llamaCpp && m_llamaCppQuantises);
    // Plain numbers show as they are (raw()); the rest are formatted.
    switch (column) {
    case Type:
        if (!layer.initialized) {
            return tr("(not yet updated)");
        }
        return llamaCpp ? m_llamaCppLabel : QString::fromUtf8(trace::toString(layer.kind));
    case Stored:
        return layer.capacity >= 0 ? QStringLiteral("%1 / %2").arg(layer.storedTokens).arg(layer.capacity)
                                   : QStringLiteral("%1 / ∞").arg(layer.storedTokens);
    case Window:
        return trace::isSlidingWindow(layer.kind)
                   ? QStringLiteral("[%1, %2) of %3").arg(layer.windowStart).arg(layer.windowEnd).arg(layer.windowSize)
                   : QStringLiteral("–");
    case Residual:
        return quantized ? QVariant(qlonglong(layer.residualTokens)) : QVariant(QStringLiteral("–"));
    case Quantized:
        return quantized ? QVariant(qlonglong(layer.quantizedTokens)) : QVariant(QStringLiteral("–"));
    case Residency:
        return QString::fromUtf8(trace::toString(layer.residency));
    case DeviceBytes:
        return EventExplainer::formatBytes(static_cast<double>(layer.bytesDevice));
    case HostBytes:
        return EventExplainer::formatBytes(static_cast<double>(layer.bytesHost));
    default:
        return raw(layer, row, column);
    }
}

bool LayerTableModel::changed(const trace::LayerState& layer, int row, int column) const {
    return m_previous && static_cast<std::size_t>(row) < m_previous->layers.size() &&
           raw(m_previous->layers[static_cast<std::size_t>(row)], row, column) != raw(layer, row, column);
}

QVariant LayerTableModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid) || !m_state) {
        return {};
    }
    const int row = index.row();
    const trace::LayerState& layer = m_state->layers[static_cast<std::size_t>(row)];
    switch (role) {
    case Qt::DisplayRole:
        return display(layer, row, index.column());
    case RawValueRole:
        return raw(layer, row, index.column());
    case Qt::TextAlignmentRole:
        return index.column() == Type || index.column() == Window || index.column() == Residency
                   ? QVariant(Qt::AlignLeft | Qt::AlignVCenter)
                   : QVariant(Qt::AlignRight | Qt::AlignVCenter);
    case ChangedRole:
        return changed(layer, row, index.column());
    case Qt::FontRole: {
        // What the current step changed stands out, so stepping shows cause and effect.
        if (changed(layer, row, index.column())) {
            QFont font;
            font.setBold(true);
            return font;
        }
        return {};
    }
    default:
        return {};
    }
}

QVariant LayerTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount) {
        return QAbstractTableModel::headerData(section, orientation, role);
    }
    static const char* const names[ColumnCount] = {"Layer",     "Type",     "Seq length", "Stored / capacity",
                                                   "kv_length", "kv_offset", "Window",     "Residual",
                                                   "Quantized", "Residency", "Device",     "Host"};
    static const char* const tips[ColumnCount] = {
        "Layer index",
        "The reference cache layer class",
        "Tokens the layer has seen",
        "Tokens physically held / tokens the layer can hold",
        "Key columns of the attention mask (get_mask_sizes)",
        "Absolute position of the first key column",
        "Sliding layers: positions held [start, end) and the window length",
        "Quantized layers: full-precision tokens waiting to be quantized",
        "Quantized layers: tokens in the quantized store",
        "Where the layer's keys and values live",
        "Device bytes of the layer",
        "Host bytes of the layer (offloaded)"};
    if (role == Qt::DisplayRole) {
        return tr(names[section]);
    }
    if (role == Qt::ToolTipRole) {
        return tr(tips[section]);
    }
    return {};
}

} // namespace kvscope::gui
