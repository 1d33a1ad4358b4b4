// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QAbstractItemModel>
#include <cstddef>
#include <vector>

namespace kvscope::gui {

/// The Qt plumbing of a tree whose nodes are numbered 0..n-1 (the derived model keeps their contents in a vector
/// of its own): each node linked under a parent node or as a root, and index/parent/rowCount over those links.
/// An index's internal id is its node's number plus one. PrefixTreeModel and ServerPrefixTreeModel derive from it.
class NodeTreeModel : public QAbstractItemModel {
public:
    QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
    QModelIndex parent(const QModelIndex& child) const override;
    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;

protected:
    NodeTreeModel(int columns, QObject* parent);
    /// Forgets every link and makes room for `count` unlinked nodes (call inside a model reset).
    void clearLinks(std::size_t count);
    /// Links `node` as the last child of `parent`, or as the last root when `parent` < 0.
    void link(int node, int parent);
    /// The node an index stands for.
    static std::size_t nodeOf(const QModelIndex& index) { return static_cast<std::size_t>(index.internalId() - 1); }

private:
    struct Links {
        int parent = -1; ///< -1 for a root
        int row = 0;     ///< among its parent's children (or the roots)
        std::vector<int> children;
    };
    int m_columns;
    std::vector<Links> m_links;
    std::vector<int> m_roots;
};

} // namespace kvscope::gui
