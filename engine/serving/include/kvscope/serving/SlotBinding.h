// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/cache/MaskSizes.h"
#include "kvscope/serving/LayerGroups.h"

#include <ATen/core/Tensor.h>
#include <cstdint>
#include <vector>

namespace kvscope::serving {

/// Where the tokens of one layer group sit in the pools for one forward pass: the pool slots
/// (block * blockSize + offset) the new tokens are written to, and the slots attention reads, in position
/// order, from the first position the group still needs (a sliding window's start, a chunk's start)
/// through the last new token. One request's pass has one row; a batch of decode steps has one row per
/// request, left-padded to a common length as a left-padded batch is (the padding mask hides the pads).
struct SlotBinding {
    /// Rows of the pass (requests).
    int64_t batch = 1;
    /// Tokens computed before this pass (the position of the first new token; in a padded batch, the
    /// padded length before the new token).
    int64_t computed = 0;
    /// Tokens of this pass, per row.
    int64_t queryLength = 0;
    /// The rows the group's layers return: kvLength rows from (padded) position kvOffset.
    cache::MaskSizes sizes;
    /// [batch * queryLength] and [batch * sizes.kvLength] int64 slot indices on the pools' device, row
    /// after row.
    at::Tensor writeSlots;
    at::Tensor readSlots;

    /// The positions a group needs for queries from `computed` on: a sliding window keeps the last
    /// window - 1 positions before the first query, a chunked group the first query's chunk, full
    /// attention everything. Pure (tested with tables).
    static cache::MaskSizes sizesFor(LayerGroups::Kind kind, int64_t window, int64_t computed,
                                     int64_t queryLength);
    /// The binding of `blockTable` (block ids by position / blockSize) for `queryLength` tokens after
    /// `computed`. Refuses, naming the position, a table that does not reach the last new token or a
    /// negative block id (a freed slot) among the positions read.
    static SlotBinding of(const std::vector<int64_t>& blockTable, int64_t blockSize, LayerGroups::Kind kind,
                          int64_t window, int64_t computed, int64_t queryLength, const at::Device& device);
    /// One decode token for each of several requests: request r has computed[r] tokens and its tables in
    /// blockTables[r]. Rows are right-aligned to `paddedLength` (the longest request's computed + 1, the
    /// same for every group) and hold what the group needs; a slot a row does not need (padding, or
    /// before its window or chunk) reads the row's own new slot, which the padding or the group's mask
    /// hides. Refuses as of() does.
    static SlotBinding ofDecodeBatch(const std::vector<const std::vector<int64_t>*>& blockTables,
                                     int64_t blockSize, LayerGroups::Kind kind, int64_t window,
                                     const std::vector<int64_t>& computed, int64_t paddedLength,
                                     const at::Device& device);
};

} // namespace kvscope::serving
