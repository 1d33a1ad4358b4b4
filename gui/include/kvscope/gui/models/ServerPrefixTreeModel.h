// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gui/models/NodeTreeModel.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kvscope::trace {
struct ServerCacheState;
}

namespace kvscope::gui {

/// An attached server's prefix cache at a step as a tree: each stored block under the block before it (a
/// shared system prompt is the trunk; a block whose parent is not held, evicted or stored before kvscope
/// attached, is a root), with its tokens' text, where it lives (medium, KV cache group) and the step that
/// stored it. Blocks stored in the step shown are marked (NewRole). Reset from a ServerCacheState.
class ServerPrefixTreeModel : public NodeTreeModel {
    Q_OBJECT
public:
    enum Column { Tokens, Medium, Group, StoredAt, Hash, ColumnCount };
    /// Qt::UserRole on any column: true where the block was stored in the step shown.
    static constexpr int NewRole = Qt::UserRole;

    explicit ServerPrefixTreeModel(QObject* parent = nullptr);

    void setState(const trace::ServerCacheState& state, std::int64_t step);
    /// Nodes in the tree (every held hash once, whatever its media).
    int nodeCount() const { return static_cast<int>(m_nodes.size()); }

    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    struct Node {
        std::uint64_t hash = 0;
        std::string text;
        std::size_t tokens = 0;
        std::vector<std::string> media;
        std::int32_t group = 0;
        std::int64_t storedStep = 0;
        bool parentMissing = false; ///< it continues a block the server no longer holds (or never sent)
        bool isNew = false;
    };
    std::vector<Node> m_nodes;
};

} // namespace kvscope::gui
