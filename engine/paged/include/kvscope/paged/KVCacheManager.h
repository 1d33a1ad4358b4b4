// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/paged/BlockPool.h"
#include "kvscope/paged/LayerGroupManager.h"
#include "kvscope/paged/PagedConfig.h"
#include "kvscope/paged/PagedTypes.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kvscope::paged {

class PagedRecorder;
struct Request;

/// A prefix-cache hit found for a request: per group its table entries, and the tokens they cover.
struct ComputedBlocks {
    std::vector<std::vector<BlockId>> perGroup;
    std::int64_t numTokens = 0;
};

/// The pool and the per-group block tables of every request (vLLM's KVCacheManager with its coordinator):
/// looks prefixes up, allocates slots for the tokens a step schedules, caches the blocks they fill, frees.
class KVCacheManager {
public:
    explicit KVCacheManager(const PagedConfig& config, PagedRecorder* recorder = nullptr);

    const PagedConfig& config() const { return m_config; }
    const BlockPool& pool() const { return m_pool; }
    BlockPool& pool() { return m_pool; }
    std::int32_t numGroups() const { return static_cast<std::int32_t>(m_groups.size()); }
    const LayerGroupManager& group(std::int32_t index) const {
        return m_groups.at(static_cast<std::size_t>(index));
    }

    /// Extends request.blockHashes to every full block of its tokens (each block hashed once).
    void updateBlockHashes(Request& request) const;
    /// The longest prefix hit of a request that holds no blocks, at most numTokens - 1 tokens (a fully
    /// cached prompt recomputes its last token, whose logits sample the next one); every group agrees on
    /// the length. Empty when prefix caching is off. Changes nothing in the pool.
    ComputedBlocks computedBlocks(Request& request);
    /// Gives the request slots for numNewTokens more tokens after its computed ones (and after `hit` for a
    /// request being admitted): frees what fell out of sliding windows, touches the hit, allocates new
    /// blocks, caches the blocks the scheduled tokens fill. false, changing nothing, when the free queue is
    /// too short.
    bool allocateSlots(Request& request, std::int64_t numNewTokens, const ComputedBlocks& hit = {});
    /// Releases every block of the request (per group, last block first).
    void free(const Request& request);

    /// The request's table in one group; empty when it holds none.
    const std::vector<BlockId>& blockTable(const std::string& request, std::int32_t group) const;
    std::vector<std::vector<BlockId>> blockTables(const std::string& request) const;

private:
    PagedConfig m_config;
    BlockPool m_pool;
    std::vector<LayerGroupManager> m_groups;
};

} // namespace kvscope::paged
