// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/paged/FreeBlockQueue.h"
#include "kvscope/paged/KVCacheBlock.h"
#include "kvscope/paged/PagedConfig.h"
#include "kvscope/paged/PagedTypes.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kvscope::paged {

class KvEventSink;
class PagedRecorder;

/// The blocks of one pool shared by every layer group (vLLM's BlockPool): reference counts, the free queue
/// in eviction order, and per group the map from prefix hash to the cached blocks holding it (several
/// blocks may hold one hash: tables are append-only, so duplicates stay until freed). Every operation costs
/// O(blocks it names); nothing scans the pool.
class BlockPool {
public:
    /// Current reserves block 0 as the null block (out of the free queue, never allocated).
    BlockPool(std::int32_t numBlocks, bool prefixCaching, FreePolicy policy, std::int32_t numGroups,
              PagedRecorder* recorder = nullptr);
    // The free queue links into m_blocks and the group managers hold a reference: the pool stays put.
    BlockPool(const BlockPool&) = delete;
    /// Publishes evictions here (BlockRemoved); the group managers publish their caching through
    /// kvEventSink(). Null: none.
    void setKvEventSink(KvEventSink* sink) { m_kvEvents = sink; }
    KvEventSink* kvEventSink() const { return m_kvEvents; }
    BlockPool& operator=(const BlockPool&) = delete;

    std::int32_t numBlocks() const { return static_cast<std::int32_t>(m_blocks.size()); }
    std::int32_t numFreeBlocks() const { return m_freeQueue.size(); }
    /// Blocks held by at least one table (excludes the null block).
    std::int32_t numUsedBlocks() const;
    /// The table entry of a hole: block 0 under Current, kNoBlock under Document.
    BlockId nullBlock() const { return m_nullBlock; }
    bool prefixCaching() const { return m_prefixCaching; }
    FreePolicy policy() const { return m_policy; }

    const KVCacheBlock& block(BlockId id) const { return m_blocks.at(static_cast<std::size_t>(id)); }
    const std::vector<KVCacheBlock>& blocks() const { return m_blocks; }
    const FreeBlockQueue& freeQueue() const { return m_freeQueue; }

    /// The first cached block holding `hash` in `group`, if any.
    std::optional<BlockId> cachedBlock(HashValue hash, std::int32_t group) const;
    /// Every cached block holding `hash` in `group` (for invariant checks).
    std::span<const BlockId> cachedBlocks(HashValue hash, std::int32_t group) const;
    /// Number of (hash, block) entries in `group`'s map.
    std::size_t numCachedEntries(std::int32_t group) const;

    /// Pops `count` blocks off the free queue's head for `request`'s table of `group`, their table indices
    /// starting at firstTableIndex; a popped block that still holds a hash is evicted. Precondition:
    /// count <= numFreeBlocks().
    std::vector<BlockId> allocate(std::int32_t count, std::string_view request, std::int32_t group,
                                  std::int32_t firstTableIndex);
    /// A prefix hit: reference count + 1, out of the free queue if it was free. The null block is skipped.
    void touch(BlockId id, std::string_view request, std::int32_t group, std::int32_t tableIndex);
    /// Marks a full block as cached under `hash` (tokens [tokenBegin, tokenEnd) of `request`).
    void cache(BlockId id, HashValue hash, HashValue parent, std::string_view request, std::int32_t group,
               std::int64_t tokenBegin, std::int64_t tokenEnd);

    /// One block released from a table (ordered freeing is the caller's: BlockPool::freeBlocks).
    struct Release {
        BlockId id = kNoBlock;
        std::int32_t tableIndex = 0;
    };
    /// Releases blocks, given in eviction order (first to be reused first). Those whose count reaches 0
    /// join the free queue: Document: all to the tail in that order; Current: those without a hash to the
    /// head in that order (all of them when prefix caching is off), those with a hash to the tail.
    /// windowed: a sliding-window group dropping blocks out of its window (for the events).
    void freeBlocks(std::span<const Release> ordered, std::string_view request, std::int32_t group,
                    bool windowed);

    /// How many evictions so far.
    std::int64_t evictions() const { return m_evictions; }

private:
    void evictIfCached(KVCacheBlock& block);

    std::vector<KVCacheBlock> m_blocks;
    FreeBlockQueue m_freeQueue;
    bool m_prefixCaching;
    FreePolicy m_policy;
    BlockId m_nullBlock = kNoBlock;
    // Per group: hash -> the blocks holding it, first cached first.
    std::vector<std::unordered_map<HashValue, std::vector<BlockId>>> m_cached;
    PagedRecorder* m_recorder;
    KvEventSink* m_kvEvents = nullptr;
    std::int64_t m_evictions = 0;
};

} // namespace kvscope::paged
