// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gui/models/NodeTreeModel.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kvscope::trace {
struct StepState;
}

namespace kvscope::gui {

class PagedHistory;

/// A serving session's prefix cache at a step as a tree: each cached hash a node under the hash of the
/// blocks before it (a shared system prompt is the trunk), showing its tokens as text, the block(s) holding
/// it, their reference count and who cached it. Blocks a prefix hit reused in the step are marked
/// (HitRole), so the path a new request reused lights up. Reset from a StepState and the PagedHistory.
class PrefixTreeModel : public NodeTreeModel {
    Q_OBJECT
public:
    enum Column { Tokens, Blocks, RefCount, CachedBy, ColumnCount };
    /// Qt::UserRole on any column: true where a block of the node was reused by a prefix hit this step.
    static constexpr int HitRole = Qt::UserRole;

    explicit PrefixTreeModel(QObject* parent = nullptr);

    /// Rebuilds the tree for `state` (its cached blocks) with the text and cachers `history` recorded up to
    /// that step.
    void setState(const trace::StepState& state, const PagedHistory& history);
    /// Nodes in the tree (every cached hash once).
    int nodeCount() const { return static_cast<int>(m_nodes.size()); }

    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    struct Node {
        std::uint64_t hash = 0;
        std::vector<std::int32_t> blocks;
        std::int32_t refCnt = 0;
        std::string text;
        bool textKnown = false;
        std::string cachedBy;
        std::int64_t tokenBegin = 0;
        std::int64_t tokenEnd = 0;
        bool hit = false;
    };
    std::vector<Node> m_nodes;
};

} // namespace kvscope::gui
