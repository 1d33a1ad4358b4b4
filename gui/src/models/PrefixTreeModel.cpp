// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/models/PrefixTreeModel.h"

#include "kvscope/gui/models/PagedExplainer.h"
#include "kvscope/gui/models/PagedHistory.h"
#include "kvscope/trace/StepState.h"

#include <QBrush>
#include <QColor>
#include <QStringList>
#include <algorithm>
#include <map>
#include <set>

namespace kvscope::gui {

PrefixTreeModel::PrefixTreeModel(QObject* parent) : NodeTreeModel(ColumnCount, parent) {}

void PrefixTreeModel::setState(const trace::StepState& state, const PagedHistory& history) {
    beginResetModel();
    m_nodes.clear();
    clearLinks(0);
    const trace::PagedState& paged = state.paged;
    if (paged.active && history.active()) {
        // The record that cached each live block last, up to this step.
        std::map<std::int32_t, const PagedHistory::CacheRecord*> latest;
        for (const PagedHistory::CacheRecord& record : history.cacheRecords()) {
            if (record.step <= state.step) {
                latest[record.block] = &record;
            }
        }
        const std::vector<std::int32_t>& touched = history.changes(state.step).touched;
        const std::set<std::int32_t> hits(touched.begin(), touched.end());
        std::map<std::uint64_t, int> byHash;
        std::map<std::uint64_t, std::uint64_t> parentOf;
        for (const trace::PagedBlockState& block : paged.blocks) {
            if (!block.cached) {
                continue;
            }
            auto [found, inserted] = byHash.try_emplace(block.hash, static_cast<int>(m_nodes.size()));
            if (inserted) {
                Node node;
                node.hash = block.hash;
                if (const auto record = latest.find(block.id);
                    record != latest.end() && record->second->hash == block.hash) {
                    const PagedHistory::CacheRecord& r = *record->second;
                    node.cachedBy = r.requestId;
                    node.tokenBegin = r.tokenBegin;
                    node.tokenEnd = r.tokenEnd;
                    if (const std::optional<std::string> text =
                            history.text(r.requestId, r.tokenBegin, r.tokenEnd)) {
                        node.text = *text;
                        node.textKnown = true;
                    }
                    parentOf[block.hash] = r.parentHash;
                }
                m_nodes.push_back(std::move(node));
            }
            Node& node = m_nodes[static_cast<std::size_t>(found->second)];
            node.blocks.push_back(block.id);
            node.refCnt += block.refCnt;
            node.hit = node.hit || hits.contains(block.id);
        }
        // Parents by hash; a node whose parent hash is not cached (the first block, or a parent evicted) is
        // a root. Children in block order, which is the order blocks were first listed.
        clearLinks(m_nodes.size());
        for (std::size_t index = 0; index < m_nodes.size(); ++index) {
            const auto parentHash = parentOf.find(m_nodes[index].hash);
            const auto parent = parentHash == parentOf.end() ? byHash.end() : byHash.find(parentHash->second);
            const bool root = parent == byHash.end() || parent->second == static_cast<int>(index);
            link(static_cast<int>(index), root ? -1 : parent->second);
        }
    }
    endResetModel();
}

QVariant PrefixTreeModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid()) {
        return {};
    }
    const Node& node = m_nodes[nodeOf(index)];
    if (role == HitRole) {
        return node.hit;
    }
    if (role == Qt::BackgroundRole) {
        return node.hit ? QVariant(QBrush(QColor(200, 225, 255))) : QVariant();
    }
    if (role == Qt::ToolTipRole) {
        return tr("hash %1, tokens %2 to %3 of %4%5")
            .arg(QStringLiteral("%1").arg(node.hash, 16, 16, QLatin1Char('0')))
            .arg(node.tokenBegin)
            .arg(node.tokenEnd - 1)
            .arg(QString::fromStdString(node.cachedBy))
            .arg(node.hit ? tr("; reused by a prefix hit this step") : QString());
    }
    if (role != Qt::DisplayRole) {
        return {};
    }
    switch (index.column()) {
    case Tokens:
        return node.textKnown ? QStringLiteral("'%1'").arg(PagedExplainer::preview(node.text, 48))
                              : tr("tokens %1 to %2").arg(node.tokenBegin).arg(node.tokenEnd - 1);
    case Blocks: {
        QStringList blocks;
        for (const std::int32_t block : node.blocks) {
            blocks << QString::number(block);
        }
        return blocks.join(QStringLiteral(", "));
    }
    case RefCount:
        return node.refCnt;
    case CachedBy:
        return QString::fromStdString(node.cachedBy);
    default:
        return {};
    }
}

QVariant PrefixTreeModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) {
        return {};
    }
    switch (section) {
    case Tokens:
        return tr("Tokens");
    case Blocks:
        return tr("Block");
    case RefCount:
        return tr("Refs");
    case CachedBy:
        return tr("Cached by");
    default:
        return {};
    }
}

} // namespace kvscope::gui
