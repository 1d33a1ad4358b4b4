// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/models/NodeTreeModel.h"

namespace kvscope::gui {

NodeTreeModel::NodeTreeModel(int columns, QObject* parent) : QAbstractItemModel(parent), m_columns(columns) {}

void NodeTreeModel::clearLinks(std::size_t count) {
    m_links.assign(count, Links{});
    m_roots.clear();
}

void NodeTreeModel::link(int node, int parent) {
    Links& links = m_links[static_cast<std::size_t>(node)];
    links.parent = parent;
    std::vector<int>& siblings = parent < 0 ? m_roots : m_links[static_cast<std::size_t>(parent)].children;
    links.row = static_cast<int>(siblings.size());
    siblings.push_back(node);
}

QModelIndex NodeTreeModel::index(int row, int column, const QModelIndex& parent) const {
    if (row < 0 || column < 0 || column >= m_columns) {
        return {};
    }
    const std::vector<int>& rows = parent.isValid() ? m_links[nodeOf(parent)].children : m_roots;
    if (row >= static_cast<int>(rows.size())) {
        return {};
    }
    return createIndex(row, column, static_cast<quintptr>(rows[static_cast<std::size_t>(row)] + 1));
}

QModelIndex NodeTreeModel::parent(const QModelIndex& child) const {
    if (!child.isValid()) {
        return {};
    }
    const int up = m_links[nodeOf(child)].parent;
    if (up < 0) {
        return {};
    }
    return createIndex(m_links[static_cast<std::size_t>(up)].row, 0, static_cast<quintptr>(up + 1));
}

int NodeTreeModel::rowCount(const QModelIndex& parent) const {
    if (!parent.isValid()) {
        return static_cast<int>(m_roots.size());
    }
    if (parent.column() != 0) {
        return 0;
    }
    return static_cast<int>(m_links[nodeOf(parent)].children.size());
}

int NodeTreeModel::columnCount(const QModelIndex&) const { return m_columns; }

} // namespace kvscope::gui
