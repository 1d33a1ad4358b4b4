// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/paged/KVCacheBlock.h"
#include "kvscope/paged/PagedTypes.h"

#include <cstdint>
#include <vector>

namespace kvscope::paged {

/// The free blocks in eviction order (head first), a doubly linked list threaded through the pool's
/// blocks (vLLM's FreeKVCacheBlockQueue): popFront, pushBack, insertAt(0..), remove are O(1).
/// The queue does not own the blocks; it keeps the vector it was built on.
class FreeBlockQueue {
public:
    /// Links every block of `blocks` in id order: 0, 1, ..., N-1.
    explicit FreeBlockQueue(std::vector<KVCacheBlock>& blocks);

    std::int32_t size() const { return m_size; }
    bool empty() const { return m_size == 0; }
    BlockId front() const { return m_head; }
    BlockId back() const { return m_tail; }

    /// Unlinks and returns the head. Precondition: not empty.
    BlockId popFront();
    /// Unlinks a block from anywhere in the queue. Precondition: it is in the queue.
    void remove(BlockId id);
    /// Links a block at the tail; returns its position (size() - 1 after the call).
    std::int32_t pushBack(BlockId id);
    /// Links a block after `previous` (kNoBlock: at the head). prepend_n of vLLM is a run of these.
    void insertAfter(BlockId previous, BlockId id);

    /// The queue head first; O(N), for snapshots and tests.
    std::vector<BlockId> toVector() const;

private:
    std::vector<KVCacheBlock>* m_blocks;
    BlockId m_head = kNoBlock;
    BlockId m_tail = kNoBlock;
    std::int32_t m_size = 0;
};

} // namespace kvscope::paged
