// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/paged/LayerGroupManager.h"

#include "CeilDiv.h"

#include "kvscope/paged/BlockHasher.h"
#include "kvscope/paged/KvCacheEvent.h"
#include "kvscope/paged/BlockPool.h"
#include "kvscope/paged/Request.h"

#include <algorithm>

namespace kvscope::paged {

namespace {

const std::vector<BlockId>& emptyTable() {
    static const std::vector<BlockId> empty;
    return empty;
}

} // namespace

LayerGroupManager::LayerGroupManager(std::int32_t group, const LayerGroup& spec, std::int64_t blockSize,
                                     BlockPool& pool, HashAlgorithm hashAlgorithm)
    : m_group(group), m_spec(spec), m_blockSize(blockSize), m_pool(pool),
      m_noneHash(BlockHasher(hashAlgorithm).noneHash()) {
    if (spec.kind == GroupKind::Sliding) {
        // The token being computed is itself in its window, hence W - 1 earlier tokens.
        m_contiguousBlocks = ceilDiv(std::max<std::int64_t>(spec.window - 1, 0), blockSize);
    }
}

std::vector<BlockId> LayerGroupManager::findLongestCacheHit(std::span<const HashValue> blockHashes,
                                                            std::int64_t maxLength) const {
    const auto maxBlocks = static_cast<std::size_t>(std::min<std::int64_t>(
        std::max<std::int64_t>(maxLength, 0) / m_blockSize, static_cast<std::int64_t>(blockHashes.size())));
    std::vector<BlockId> hit;
    if (m_spec.kind == GroupKind::Full) {
        // Hashes chain: once one block misses, none after it can hit.
        for (std::size_t i = 0; i < maxBlocks; ++i) {
            const auto block = m_pool.cachedBlock(blockHashes[i], m_group);
            if (!block)
                break;
            hit.push_back(*block);
        }
        return hit;
    }
    // Sliding window: only the last window before the hit must be cached; search from the right for a run
    // of m_contiguousBlocks cached blocks, the blocks before it are holes.
    hit.assign(maxBlocks, m_pool.nullBlock());
    std::size_t contiguous = 0;
    for (std::size_t i = maxBlocks; i-- > 0;) {
        if (const auto block = m_pool.cachedBlock(blockHashes[i], m_group)) {
            hit[i] = *block;
            ++contiguous;
            if (static_cast<std::int64_t>(contiguous) >= m_contiguousBlocks) {
                hit.resize(i + contiguous);
                return hit;
            }
        } else {
            contiguous = 0;
        }
    }
    // No full run: a run at the very start still counts (nothing before it is needed).
    hit.resize(contiguous);
    return hit;
}

std::int32_t LayerGroupManager::numBlocksToAllocate(const std::string& request, std::int64_t numTokens,
                                                    std::span<const BlockId> hit) const {
    const std::int64_t required = ceilDiv(numTokens, m_blockSize);
    const std::int64_t held = static_cast<std::int64_t>(table(request).size() + hit.size());
    std::int64_t count = std::max<std::int64_t>(required - held, 0);
    for (const BlockId id : hit) {
        if (id != kNoBlock && id != m_pool.nullBlock() && m_pool.block(id).refCnt == 0)
            ++count; // free now: touching it takes it off the free queue
    }
    return static_cast<std::int32_t>(count);
}

void LayerGroupManager::removeSkippedBlocks(const std::string& request, std::int64_t numComputedTokens) {
    if (m_spec.kind != GroupKind::Sliding)
        return;
    const auto it = m_tables.find(request);
    if (it == m_tables.end())
        return;
    auto& blocks = it->second;
    const std::int64_t lastUsefulToken = numComputedTokens - m_spec.window + 1;
    if (lastUsefulToken <= 0)
        return;
    const std::int64_t lastUsefulBlock =
        std::min<std::int64_t>(lastUsefulToken / m_blockSize, static_cast<std::int64_t>(blocks.size()));
    // Walk back from the last dropped block: earlier ones were dropped by earlier steps, so this stops
    // after the blocks that just left the window (O(blocks dropped), not O(table)).
    std::vector<BlockPool::Release> removed;
    for (std::int64_t i = lastUsefulBlock - 1; i >= 0; --i) {
        BlockId& entry = blocks[static_cast<std::size_t>(i)];
        if (entry == m_pool.nullBlock())
            break;
        removed.push_back({entry, static_cast<std::int32_t>(i)});
        entry = m_pool.nullBlock();
    }
    m_pool.freeBlocks(removed, request, m_group, true);
}

void LayerGroupManager::saveComputedBlocks(const std::string& request, std::span<const BlockId> hit) {
    auto& blocks = m_tables[request];
    if (!blocks.empty() || m_numCachedBlocks.contains(request))
        return; // a running request: its hit was taken at admission
    for (std::size_t i = 0; i < hit.size(); ++i)
        m_pool.touch(hit[i], request, m_group, static_cast<std::int32_t>(i));
    blocks.assign(hit.begin(), hit.end());
    m_numCachedBlocks[request] = static_cast<std::int64_t>(hit.size());
}

void LayerGroupManager::allocateNewBlocks(const std::string& request, std::int64_t numTokens) {
    auto& blocks = m_tables[request];
    const std::int64_t count = ceilDiv(numTokens, m_blockSize) - static_cast<std::int64_t>(blocks.size());
    if (count <= 0)
        return;
    const auto ids = m_pool.allocate(static_cast<std::int32_t>(count), request, m_group,
                                     static_cast<std::int32_t>(blocks.size()));
    blocks.insert(blocks.end(), ids.begin(), ids.end());
}

void LayerGroupManager::cacheBlocks(const Request& request, std::int64_t numTokens) {
    const auto tableIt = m_tables.find(request.id);
    if (tableIt == m_tables.end())
        return;
    const auto& blocks = tableIt->second;
    std::int64_t& numCached = m_numCachedBlocks[request.id];
    const std::int64_t numFull =
        std::min<std::int64_t>({numTokens / m_blockSize, static_cast<std::int64_t>(blocks.size()),
                                static_cast<std::int64_t>(request.blockHashes.size())});
    // One BlockStored per call, as vLLM's cache_full_blocks: the blocks cached now, their parent the block
    // before the first of them.
    KvEventSink* sink = m_pool.kvEventSink();
    KvCacheEvent stored;
    for (std::int64_t i = numCached; i < numFull; ++i) {
        const BlockId id = blocks[static_cast<std::size_t>(i)];
        if (id == kNoBlock || id == m_pool.nullBlock() || m_pool.block(id).hash)
            continue;
        const HashValue hash = request.blockHashes[static_cast<std::size_t>(i)];
        const HashValue parent = i == 0 ? m_noneHash : request.blockHashes[static_cast<std::size_t>(i - 1)];
        m_pool.cache(id, hash, parent, request.id, m_group, i * m_blockSize, (i + 1) * m_blockSize);
        if (sink != nullptr) {
            stored.blockHashes.push_back(hash);
            stored.cacheSalts.push_back(i == 0 ? request.cacheSalt : std::string());
        }
    }
    if (sink != nullptr && numCached < numFull) {
        if (numCached > 0)
            stored.parentBlockHash = request.blockHashes[static_cast<std::size_t>(numCached - 1)];
        // vLLM publishes the tokens of the whole range, holes included.
        for (std::int64_t position = numCached * m_blockSize; position < numFull * m_blockSize; ++position)
            stored.tokenIds.push_back(request.tokenAt(position));
        stored.blockSize = m_blockSize;
        stored.groupIdx = m_group;
        stored.specKind = m_spec.kind == GroupKind::Sliding ? "sliding_window" : "full_attention";
        if (m_spec.kind == GroupKind::Sliding)
            stored.slidingWindow = m_spec.window;
        sink->publish(stored);
    }
    numCached = std::max(numCached, numFull);
}

void LayerGroupManager::free(const std::string& request) {
    const auto it = m_tables.find(request);
    if (it != m_tables.end()) {
        // Last block first: it hashes the most tokens and is the least likely to be hit again.
        std::vector<BlockPool::Release> ordered;
        ordered.reserve(it->second.size());
        for (std::size_t i = it->second.size(); i-- > 0;)
            ordered.push_back({it->second[i], static_cast<std::int32_t>(i)});
        m_tables.erase(it);
        m_pool.freeBlocks(ordered, request, m_group, false);
    }
    m_numCachedBlocks.erase(request);
}

const std::vector<BlockId>& LayerGroupManager::table(const std::string& request) const {
    const auto it = m_tables.find(request);
    return it == m_tables.end() ? emptyTable() : it->second;
}

} // namespace kvscope::paged
