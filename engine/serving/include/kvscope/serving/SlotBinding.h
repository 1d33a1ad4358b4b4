// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/cache/MaskSizes.h"
#include "kvscope/serving/LayerGroups.h"

#include <ATen/core/Tensor.h>
#include <cstdint>
#include <vector>

namespace kvscope::serving {

/// Where one request's tokens of one layer group sit in the pools for one forward pass: the pool slots
/// (block * blockSize + offset) its new tokens are written to, and the slots its attention reads, in
/// position order, from the first position the group still needs (a sliding window's start, a chunk's
/// start) through the last new token.
struct SlotBinding {
    /// Tokens computed before this pass (the position of the first new token).
    int64_t computed = 0;
    /// Tokens of this pass.
    int64_t queryLength = 0;
    /// The rows the group's layers return: kvLength rows from position kvOffset.
    cache::MaskSizes sizes;
    /// [queryLength] and [sizes.kvLength] int64 slot indices on the pools' device.
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
};

} // namespace kvscope::serving
