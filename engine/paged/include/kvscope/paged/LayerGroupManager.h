// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/paged/PagedConfig.h"
#include "kvscope/paged/PagedTypes.h"

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace kvscope::paged {

class BlockPool;
struct Request;

/// The block tables of one layer group (vLLM's SingleTypeKVCacheManager): full attention keeps every block
/// and finds its prefix hit left to right; a sliding window of W tokens replaces the blocks wholly out of
/// the window by holes (the pool's null block) and frees them, and finds the rightmost run of
/// ceil((W - 1) / blockSize) cached blocks.
class LayerGroupManager {
public:
    LayerGroupManager(std::int32_t group, const LayerGroup& spec, std::int64_t blockSize, BlockPool& pool,
                      HashAlgorithm hashAlgorithm = HashAlgorithm::Fnv1a);

    std::int32_t group() const { return m_group; }
    const LayerGroup& spec() const { return m_spec; }

    /// The longest prefix hit within maxLength tokens, as table entries (holes for skipped sliding blocks).
    std::vector<BlockId> findLongestCacheHit(std::span<const HashValue> blockHashes,
                                             std::int64_t maxLength) const;
    /// Blocks the pool must hand out to give the request numTokens slots with `hit` touched first (a hit
    /// block that is free counts: touching takes it out of the free queue).
    std::int32_t numBlocksToAllocate(const std::string& request, std::int64_t numTokens,
                                     std::span<const BlockId> hit) const;
    /// Frees the blocks wholly out of the window before numComputedTokens (sliding groups; no-op for full).
    void removeSkippedBlocks(const std::string& request, std::int64_t numComputedTokens);
    /// Touches a new request's hit blocks and makes them the start of its table.
    void saveComputedBlocks(const std::string& request, std::span<const BlockId> hit);
    /// Grows the table to ceil(numTokens / blockSize) blocks from the free queue.
    void allocateNewBlocks(const std::string& request, std::int64_t numTokens);
    /// Caches the table's full blocks up to numTokens tokens of `request` (hashes from request.blockHashes).
    void cacheBlocks(const Request& request, std::int64_t numTokens);
    /// Releases the request's whole table, last block first.
    void free(const std::string& request);

    /// The request's table; empty when it has none.
    const std::vector<BlockId>& table(const std::string& request) const;
    /// Table entries holding a block, for every request (invariant checks).
    const std::unordered_map<std::string, std::vector<BlockId>>& tables() const { return m_tables; }

private:
    std::int32_t m_group;
    LayerGroup m_spec;
    std::int64_t m_blockSize;
    BlockPool& m_pool;
    HashValue m_noneHash; ///< the parent recorded for a first block
    std::int64_t m_contiguousBlocks = 0; ///< sliding: blocks a hit needs at its end
    std::unordered_map<std::string, std::vector<BlockId>> m_tables;
    std::unordered_map<std::string, std::int64_t> m_numCachedBlocks;
};

} // namespace kvscope::paged
