// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/geometry/PoolGeometry.h"

#include <algorithm>
#include <cmath>

namespace kvscope::gui {
namespace {

double gapOf(double cell) {
    return std::max(1.0, std::floor(cell / 10.0));
}

int columnsFor(double width, double cell) {
    const double gap = gapOf(cell);
    return std::max(1, static_cast<int>(std::floor((width + gap) / (cell + gap))));
}

} // namespace

PoolLayout PoolGeometry::layout(int blocks, double width, double height, double minCell, double maxCell) {
    PoolLayout layout;
    minCell = std::max(1.0, std::floor(minCell));
    maxCell = std::max(minCell, std::floor(maxCell));
    if (blocks <= 0) {
        layout.cell = maxCell;
        layout.gap = gapOf(maxCell);
        return layout;
    }
    double chosen = minCell;
    for (double cell = maxCell; cell >= minCell; cell -= 1.0) {
        const int columns = columnsFor(width, cell);
        const int rows = (blocks + columns - 1) / columns;
        const double gap = gapOf(cell);
        if (rows * (cell + gap) - gap <= height) {
            chosen = cell;
            break;
        }
    }
    layout.cell = chosen;
    layout.gap = gapOf(chosen);
    layout.columns = columnsFor(width, chosen);
    layout.rows = (blocks + layout.columns - 1) / layout.columns;
    return layout;
}

CellRect PoolGeometry::cellRect(const PoolLayout& layout, int block) {
    const int column = block % std::max(1, layout.columns);
    const int row = block / std::max(1, layout.columns);
    const double pitch = layout.cell + layout.gap;
    return CellRect{layout.left + column * pitch, layout.top + row * pitch, layout.cell};
}

int PoolGeometry::blockAt(const PoolLayout& layout, double x, double y, int blocks) {
    const double pitch = layout.cell + layout.gap;
    if (pitch <= 0.0 || x < layout.left || y < layout.top) {
        return -1;
    }
    const auto column = static_cast<int>(std::floor((x - layout.left) / pitch));
    const auto row = static_cast<int>(std::floor((y - layout.top) / pitch));
    if (column >= layout.columns || x - layout.left - column * pitch >= layout.cell ||
        y - layout.top - row * pitch >= layout.cell) {
        return -1;
    }
    const int block = row * layout.columns + column;
    return block < blocks ? block : -1;
}

double PoolGeometry::height(const PoolLayout& layout) {
    return layout.rows <= 0 ? 0.0 : layout.rows * (layout.cell + layout.gap) - layout.gap;
}

std::vector<BlockCell> PoolGeometry::cellsOf(const trace::PagedState& state, int group,
                                             const std::vector<std::int32_t>& allocated,
                                             const std::vector<std::int32_t>& touched,
                                             const std::vector<std::int32_t>& evicted) {
    std::vector<BlockCell> cells;
    if (!state.active) {
        return cells;
    }
    cells.resize(static_cast<std::size_t>(state.numBlocks));
    for (std::int32_t id = 0; id < state.numBlocks; ++id) {
        BlockCell& cell = cells[static_cast<std::size_t>(id)];
        cell.block = id;
        if (static_cast<std::size_t>(id) < state.blocks.size()) {
            const trace::PagedBlockState& block = state.blocks[static_cast<std::size_t>(id)];
            cell.refCnt = block.refCnt;
            cell.group = block.group;
            cell.kind = block.cached ? BlockCellKind::CachedFree : BlockCellKind::Free;
        }
        if (id == state.nullBlock) {
            cell.kind = BlockCellKind::Null;
        }
    }
    for (std::size_t rank = 0; rank < state.freeQueue.size(); ++rank) {
        const std::int32_t id = state.freeQueue[rank];
        if (id >= 0 && id < state.numBlocks) {
            cells[static_cast<std::size_t>(id)].freeRank = static_cast<std::int32_t>(rank);
        }
    }
    // Only running requests hold blocks: a finished one keeps its tables in the state for the record.
    for (std::size_t index = 0; index < state.requests.size(); ++index) {
        const trace::PagedRequestState& request = state.requests[index];
        if (request.phase != trace::PagedRequestPhase::Running) {
            continue;
        }
        for (std::size_t g = 0; g < request.blockTables.size(); ++g) {
            if (group >= 0 && static_cast<int>(g) != group) {
                continue;
            }
            for (const std::int32_t id : request.blockTables[g]) {
                if (id < 0 || id >= state.numBlocks || id == state.nullBlock) {
                    continue; // a sliding window's hole
                }
                BlockCell& cell = cells[static_cast<std::size_t>(id)];
                cell.kind = BlockCellKind::Held;
                if (cell.owners.empty() || cell.owners.back() != static_cast<int>(index)) {
                    cell.owners.push_back(static_cast<int>(index));
                }
            }
        }
    }
    for (BlockCell& cell : cells) {
        if (cell.kind != BlockCellKind::Held && cell.freeRank < 0 && cell.kind != BlockCellKind::Null &&
            cell.refCnt > 0) {
            cell.kind = BlockCellKind::Held; // held by a group the selection leaves out
        }
        cell.otherGroup =
            group >= 0 && cell.group >= 0 && cell.group != group && cell.kind != BlockCellKind::Null;
    }
    const auto mark = [&cells](const std::vector<std::int32_t>& ids, bool BlockCell::*flag) {
        for (const std::int32_t id : ids) {
            if (id >= 0 && static_cast<std::size_t>(id) < cells.size()) {
                cells[static_cast<std::size_t>(id)].*flag = true;
            }
        }
    };
    mark(allocated, &BlockCell::allocated);
    mark(touched, &BlockCell::touched);
    mark(evicted, &BlockCell::evicted);
    return cells;
}

} // namespace kvscope::gui
