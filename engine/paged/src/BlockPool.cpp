// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/paged/BlockPool.h"

#include "kvscope/paged/KvCacheEvent.h"
#include "kvscope/paged/PagedRecorder.h"

#include <algorithm>
#include <cassert>

namespace kvscope::paged {

namespace {

std::vector<KVCacheBlock> makeBlocks(std::int32_t count) {
    std::vector<KVCacheBlock> blocks(static_cast<std::size_t>(std::max(count, 0)));
    for (std::size_t i = 0; i < blocks.size(); ++i)
        blocks[i].id = static_cast<BlockId>(i);
    return blocks;
}

} // namespace

BlockPool::BlockPool(std::int32_t numBlocks, bool prefixCaching, FreePolicy policy, std::int32_t numGroups,
                     PagedRecorder* recorder)
    : m_blocks(makeBlocks(numBlocks)), m_freeQueue(m_blocks), m_prefixCaching(prefixCaching),
      m_policy(policy), m_cached(static_cast<std::size_t>(std::max(numGroups, 1))), m_recorder(recorder) {
    if (policy == FreePolicy::Current && !m_blocks.empty()) {
        // vLLM's code takes the first block off the queue as the null block: the hole of sliding tables.
        m_nullBlock = m_freeQueue.popFront();
        m_blocks[static_cast<std::size_t>(m_nullBlock)].isNull = true;
    }
}

std::int32_t BlockPool::numUsedBlocks() const {
    return numBlocks() - numFreeBlocks() - (m_nullBlock != kNoBlock ? 1 : 0);
}

std::optional<BlockId> BlockPool::cachedBlock(HashValue hash, std::int32_t group) const {
    const auto& map = m_cached[static_cast<std::size_t>(group)];
    const auto it = map.find(hash);
    if (it == map.end() || it->second.empty())
        return std::nullopt;
    return it->second.front();
}

std::span<const BlockId> BlockPool::cachedBlocks(HashValue hash, std::int32_t group) const {
    const auto& map = m_cached[static_cast<std::size_t>(group)];
    const auto it = map.find(hash);
    if (it == map.end())
        return {};
    return it->second;
}

std::size_t BlockPool::numCachedEntries(std::int32_t group) const {
    std::size_t count = 0;
    for (const auto& [hash, ids] : m_cached[static_cast<std::size_t>(group)])
        count += ids.size();
    return count;
}

void BlockPool::evictIfCached(KVCacheBlock& block) {
    if (!block.hash)
        return;
    auto& map = m_cached[static_cast<std::size_t>(block.group)];
    const auto it = map.find(*block.hash);
    if (it != map.end()) {
        auto& ids = it->second;
        ids.erase(std::find(ids.begin(), ids.end(), block.id));
        if (ids.empty())
            map.erase(it);
    }
    if (m_recorder != nullptr)
        m_recorder->evicted(block.group, block.id, *block.hash);
    if (m_kvEvents != nullptr) {
        KvCacheEvent removed;
        removed.type = KvCacheEvent::Type::BlockRemoved;
        removed.blockHashes = {*block.hash};
        removed.groupIdx = block.group;
        m_kvEvents->publish(removed);
    }
    block.hash.reset();
    ++m_evictions;
}

std::vector<BlockId> BlockPool::allocate(std::int32_t count, std::string_view request, std::int32_t group,
                                         std::int32_t firstTableIndex) {
    assert(count <= numFreeBlocks());
    std::vector<BlockId> ids;
    ids.reserve(static_cast<std::size_t>(std::max(count, 0)));
    for (std::int32_t i = 0; i < count; ++i) {
        const BlockId id = m_freeQueue.popFront();
        KVCacheBlock& block = m_blocks[static_cast<std::size_t>(id)];
        evictIfCached(block);
        assert(block.refCnt == 0);
        block.refCnt = 1;
        block.group = group;
        ids.push_back(id);
        if (m_recorder != nullptr)
            m_recorder->allocated(request, group, id, firstTableIndex + i);
    }
    return ids;
}

void BlockPool::touch(BlockId id, std::string_view request, std::int32_t group, std::int32_t tableIndex) {
    if (id == kNoBlock || id == m_nullBlock)
        return;
    KVCacheBlock& block = m_blocks[static_cast<std::size_t>(id)];
    if (block.refCnt == 0)
        m_freeQueue.remove(id);
    ++block.refCnt;
    if (m_recorder != nullptr)
        m_recorder->touched(request, group, id, tableIndex, block.refCnt);
}

void BlockPool::cache(BlockId id, HashValue hash, HashValue parent, std::string_view request,
                      std::int32_t group, std::int64_t tokenBegin, std::int64_t tokenEnd) {
    if (id == kNoBlock || id == m_nullBlock)
        return;
    KVCacheBlock& block = m_blocks[static_cast<std::size_t>(id)];
    assert(!block.hash);
    block.hash = hash;
    block.group = group;
    m_cached[static_cast<std::size_t>(group)][hash].push_back(id);
    if (m_recorder != nullptr)
        m_recorder->cached(request, group, id, hash, parent, tokenBegin, tokenEnd);
}

void BlockPool::freeBlocks(std::span<const Release> ordered, std::string_view request, std::int32_t group,
                           bool windowed) {
    // Releases first (events for blocks still held), then the queue operations in the order they happen,
    // so that a replay inserting each block at its recorded position rebuilds the same queue.
    std::vector<Release> toHead;
    std::vector<Release> toTail;
    for (const Release& release : ordered) {
        if (release.id == kNoBlock || release.id == m_nullBlock)
            continue;
        KVCacheBlock& block = m_blocks[static_cast<std::size_t>(release.id)];
        assert(block.refCnt > 0);
        --block.refCnt;
        if (block.refCnt > 0) {
            if (m_recorder != nullptr)
                m_recorder->freed(request, group, release.id, release.tableIndex, block.refCnt, -1, windowed);
            continue;
        }
        const bool reuseFirst = m_policy == FreePolicy::Current && (!block.hash || !m_prefixCaching);
        (reuseFirst ? toHead : toTail).push_back(release);
    }
    BlockId previous = kNoBlock;
    std::int32_t position = 0;
    for (const Release& release : toHead) {
        m_freeQueue.insertAfter(previous, release.id);
        previous = release.id;
        if (m_recorder != nullptr)
            m_recorder->freed(request, group, release.id, release.tableIndex, 0, position, windowed);
        ++position;
    }
    for (const Release& release : toTail) {
        const std::int32_t at = m_freeQueue.pushBack(release.id);
        if (m_recorder != nullptr)
            m_recorder->freed(request, group, release.id, release.tableIndex, 0, at, windowed);
    }
}

} // namespace kvscope::paged
