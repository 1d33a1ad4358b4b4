// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/paged/PagedTypes.h"

#include <cstdint>
#include <optional>

namespace kvscope::paged {

/// One block of the pool: its reference count, its prefix hash while cached, and its links in the free
/// queue (intrusive, so removal from the middle is O(1)).
struct KVCacheBlock {
    BlockId id = kNoBlock;
    std::int32_t refCnt = 0;       ///< block tables holding it (the null block's is not kept)
    std::optional<HashValue> hash; ///< set while the block is cached (full, hashed), reset on eviction
    std::int32_t group = -1;       ///< the layer group that holds or last held it; -1 never allocated
    bool isNull = false;           ///< the Current policy's reserved block 0
    // Free queue links; kNoBlock at the ends. inFreeQueue tells a free block from a held one.
    BlockId prevFree = kNoBlock;
    BlockId nextFree = kNoBlock;
    bool inFreeQueue = false;
};

} // namespace kvscope::paged
