// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/paged/FreeBlockQueue.h"

#include <cassert>

namespace kvscope::paged {

FreeBlockQueue::FreeBlockQueue(std::vector<KVCacheBlock>& blocks) : m_blocks(&blocks) {
    for (auto& block : blocks)
        pushBack(block.id);
}

BlockId FreeBlockQueue::popFront() {
    assert(m_head != kNoBlock);
    const BlockId id = m_head;
    remove(id);
    return id;
}

void FreeBlockQueue::remove(BlockId id) {
    auto& blocks = *m_blocks;
    KVCacheBlock& block = blocks[static_cast<std::size_t>(id)];
    assert(block.inFreeQueue);
    if (block.prevFree != kNoBlock)
        blocks[static_cast<std::size_t>(block.prevFree)].nextFree = block.nextFree;
    else
        m_head = block.nextFree;
    if (block.nextFree != kNoBlock)
        blocks[static_cast<std::size_t>(block.nextFree)].prevFree = block.prevFree;
    else
        m_tail = block.prevFree;
    block.prevFree = kNoBlock;
    block.nextFree = kNoBlock;
    block.inFreeQueue = false;
    --m_size;
}

std::int32_t FreeBlockQueue::pushBack(BlockId id) {
    insertAfter(m_tail, id);
    return m_size - 1;
}

void FreeBlockQueue::insertAfter(BlockId previous, BlockId id) {
    auto& blocks = *m_blocks;
    KVCacheBlock& block = blocks[static_cast<std::size_t>(id)];
    assert(!block.inFreeQueue);
    const BlockId next = previous == kNoBlock ? m_head : blocks[static_cast<std::size_t>(previous)].nextFree;
    block.prevFree = previous;
    block.nextFree = next;
    if (previous != kNoBlock)
        blocks[static_cast<std::size_t>(previous)].nextFree = id;
    else
        m_head = id;
    if (next != kNoBlock)
        blocks[static_cast<std::size_t>(next)].prevFree = id;
    else
        m_tail = id;
    block.inFreeQueue = true;
    ++m_size;
}

std::vector<BlockId> FreeBlockQueue::toVector() const {
    std::vector<BlockId> ids;
    ids.reserve(static_cast<std::size_t>(m_size));
    for (BlockId id = m_head; id != kNoBlock; id = (*m_blocks)[static_cast<std::size_t>(id)].nextFree)
        ids.push_back(id);
    return ids;
}

} // namespace kvscope::paged
