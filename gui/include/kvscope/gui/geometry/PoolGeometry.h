// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/trace/PagedState.h"

#include <cstdint>
#include <vector>

namespace kvscope::gui {

/// What a block of the pool is at a step, as the pool view draws it.
enum class BlockCellKind : std::uint8_t {
    Free,       ///< in the free queue, holding no hash: drawn empty
    CachedFree, ///< in the free queue but still cached: grey, with its free-queue rank
    Held,       ///< in at least one running request's block table: its request's colour
    Null,       ///< the reserved null block (free policy `current`)
};

/// One cell of the pool view: a block, who holds it, and what the step did to it.
struct BlockCell {
    std::int32_t block = 0;
    BlockCellKind kind = BlockCellKind::Free;
    std::vector<int> owners; ///< indices (arrival order) of the running requests holding it, ascending
    std::int32_t refCnt = 0;
    std::int32_t freeRank = -1; ///< position in the free queue (0 = allocated next), -1 when held
    std::int32_t group = -1;    ///< the layer group that holds or last held it
    bool otherGroup = false;    ///< a group is selected and the block belongs to another one
    bool allocated = false;     ///< this step took it from the free queue
    bool touched = false;       ///< this step reused it (a prefix hit)
    bool evicted = false;       ///< this step evicted its hash
    bool operator==(const BlockCell&) const = default;
};

/// The grid: `columns` x `rows` square cells of `cell` pixels, `gap` apart, from (left, top).
struct PoolLayout {
    int columns = 1;
    int rows = 0;
    double cell = 0.0;
    double gap = 0.0;
    double left = 0.0;
    double top = 0.0;
    bool operator==(const PoolLayout&) const = default;
};

/// A cell's rectangle in pixels.
struct CellRect {
    double x = 0.0;
    double y = 0.0;
    double size = 0.0;
    bool operator==(const CellRect&) const = default;
};

/// Pure geometry and classification of the block pool view: a wrapping grid of one cell per block.
class PoolGeometry {
public:
    /// The largest cells in [minCell, maxCell] (a whole pixel count) for which `blocks` cells wrap into
    /// `width` x `height`; cells of minCell when even those overflow the height (the view scrolls), and at
    /// least one column. gap: a tenth of the cell, at least one pixel.
    static PoolLayout layout(int blocks, double width, double height, double minCell, double maxCell);
    static CellRect cellRect(const PoolLayout& layout, int block);
    /// The block under pixel (x, y), -1 over a gap or outside the `blocks` cells.
    static int blockAt(const PoolLayout& layout, double x, double y, int blocks);
    /// Total height the layout's rows take.
    static double height(const PoolLayout& layout);

    /// One cell per block of `state` (empty when the session has no pool). Owners are the running
    /// requests whose tables of `group` hold it (-1: of any group); a block held by another group than the
    /// selected one is marked otherGroup. `allocated`, `touched` and `evicted` list this step's changes.
    static std::vector<BlockCell> cellsOf(const trace::PagedState& state, int group,
                                          const std::vector<std::int32_t>& allocated,
                                          const std::vector<std::int32_t>& touched,
                                          const std::vector<std::int32_t>& evicted);
};

} // namespace kvscope::gui
