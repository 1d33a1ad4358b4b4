// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/models/ServerPrefixTreeModel.h"

#include "kvscope/gui/models/PagedExplainer.h"
#include "kvscope/trace/ServerCacheState.h"

#include <QBrush>
#include <QColor>
#include <QStringList>
#include <algorithm>
#include <map>

namespace kvscope::gui {

ServerPrefixTreeModel::ServerPrefixTreeModel(QObject* parent) : NodeTreeModel(ColumnCount, parent) {}

void ServerPrefixTreeModel::setState(const trace::ServerCacheState& state, std::int64_t step) {
    beginResetModel();
    m_nodes.clear();
    clearLinks(0);
    // One node per hash: a block held in several media (GPU and its CPU copy) is one prefix.
    std::map<std::uint64_t, int> byHash;
    std::map<std::uint64_t, std::pair<bool, std::uint64_t>> parentOf;
    std::vector<const trace::ServerBlockState*> order;
    for (const auto& [key, block] : state.blocks) {
        order.push_back(&block);
    }
    // Children in the order they were stored.
    std::sort(order.begin(), order.end(), [](const auto* a, const auto* b) { return a->storedIndex < b->storedIndex; });
    for (const trace::ServerBlockState* block : order) {
        auto [found, inserted] = byHash.try_emplace(block->hash, static_cast<int>(m_nodes.size()));
        if (inserted) {
            Node node;
            node.hash = block->hash;
            node.text = block->text;
            node.tokens = block->tokenIds.size();
            node.group = block->group;
            node.storedStep = block->storedStep;
            m_nodes.push_back(std::move(node));
            parentOf[block->hash] = {block->hasParent, block->parentHash};
        }
        Node& node = m_nodes[static_cast<std::size_t>(found->second)];
        node.media.push_back(block->medium);
        node.isNew = node.isNew || block->storedStep == step;
    }
    std::vector<int> parentIndex(m_nodes.size(), -1);
    for (std::size_t index = 0; index < m_nodes.size(); ++index) {
        const auto [hasParent, parentHash] = parentOf[m_nodes[index].hash];
        const auto parent = hasParent ? byHash.find(parentHash) : byHash.end();
        if (parent != byHash.end() && parent->second != static_cast<int>(index)) {
            parentIndex[index] = parent->second;
        }
        m_nodes[index].parentMissing = hasParent && parent == byHash.end();
    }
    // A hostile stream may name a block its own ancestor: walking up from each node, a cycle is cut where it
    // closes, so that every node hangs from a root (each node is walked once: linear).
    std::vector<std::uint8_t> mark(m_nodes.size(), 0); // 0 unseen, 1 on the current walk, 2 done
    for (std::size_t start = 0; start < m_nodes.size(); ++start) {
        std::vector<int> walk;
        for (int at = static_cast<int>(start); at >= 0 && mark[static_cast<std::size_t>(at)] == 0;
             at = parentIndex[static_cast<std::size_t>(at)]) {
            mark[static_cast<std::size_t>(at)] = 1;
            walk.push_back(at);
            const int up = parentIndex[static_cast<std::size_t>(at)];
            if (up >= 0 && mark[static_cast<std::size_t>(up)] == 1) {
                parentIndex[static_cast<std::size_t>(at)] = -1;
            }
        }
        for (const int at : walk) {
            mark[static_cast<std::size_t>(at)] = 2;
        }
    }
    clearLinks(m_nodes.size());
    for (std::size_t index = 0; index < m_nodes.size(); ++index) {
        link(static_cast<int>(index), parentIndex[index]);
    }
    endResetModel();
}

QVariant ServerPrefixTreeModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid()) {
        return {};
    }
    const Node& node = m_nodes[nodeOf(index)];
    if (role == NewRole) {
        return node.isNew;
    }
    if (role == Qt::BackgroundRole) {
        return node.isNew ? QVariant(QBrush(QColor(200, 235, 200))) : QVariant();
    }
    const QString hash = QString::number(node.hash);
    if (role == Qt::ToolTipRole) {
        return tr("block hash %1, %2 tokens, stored at step %3%4%5")
            .arg(hash)
            .arg(node.tokens)
            .arg(node.storedStep)
            .arg(node.isNew ? tr("; stored in this step") : QString())
            .arg(node.parentMissing ? tr("; the block before it is not held (evicted, or stored before kvscope "
                                         "attached)")
                                    : QString());
    }
    if (role != Qt::DisplayRole) {
        return {};
    }
    switch (index.column()) {
    case Tokens:
        if (!node.text.empty()) {
            return QStringLiteral("%1'%2'").arg(node.parentMissing ? QStringLiteral("… ") : QString(),
                                                PagedExplainer::preview(node.text, 400));
        }
        return tr("%1 tokens (no tokenizer given)").arg(node.tokens);
    case Medium: {
        QStringList media;
        for (const std::string& medium : node.media) {
            media << QString::fromStdString(medium);
        }
        return media.join(QStringLiteral(", "));
    }
    case Group:
        return node.group;
    case StoredAt:
        return QVariant::fromValue<qlonglong>(node.storedStep);
    case Hash:
        return hash;
    default:
        return {};
    }
}

QVariant ServerPrefixTreeModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) {
        return {};
    }
    switch (section) {
    case Tokens:
        return tr("Tokens");
    case Medium:
        return tr("Medium");
    case Group:
        return tr("Group");
    case StoredAt:
        return tr("Stored at step");
    case Hash:
        return tr("Block hash");
    default:
        return {};
    }
}

} // namespace kvscope::gui
