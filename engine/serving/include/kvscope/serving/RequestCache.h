// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/model/ModelCache.h"
#include "kvscope/serving/KvPools.h"
#include "kvscope/serving/SlotBinding.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace kvscope::serving {

class PagedLayer;

/// One request's view of the paged pools, as the model's cache: PagedLayers bound to the request's block
/// tables for the pass about to run, and the request's own linear-attention states (not paged: a
/// recurrent state summarises every token, so it cannot be split into blocks or shared by a prefix).
class RequestCache {
public:
    /// `pools` must outlive the cache.
    RequestCache(const model::Architecture& architecture, const LayerGroups& groups, KvPools& pools);
    ~RequestCache();
    RequestCache(const RequestCache&) = delete;
    RequestCache& operator=(const RequestCache&) = delete;

    /// Binds the next pass: `queryLength` tokens after `computed`, one block table per group (ids by
    /// position / blockSize, -1 for a freed entry). A pass from position 0 forgets the linear-attention
    /// states (a new or preempted request computes every token again).
    void bind(const std::vector<std::vector<int64_t>>& blockTables, int64_t computed, int64_t queryLength);

    /// Binds a batch of decode steps instead (one token for each of several requests; models without
    /// linear-attention layers only, whose requests hold nothing but their blocks): request r has computed[r]
    /// tokens and its tables in blockTables[r]. Returns the padding mask [batch, longest computed + 1] (1 for
    /// real positions, right-aligned) that the forward pass takes with the batch.
    at::Tensor bindDecodeBatch(const std::vector<const std::vector<std::vector<int64_t>>*>& blockTables,
                               const std::vector<int64_t>& computed);

    model::ModelCache& modelCache() { return *m_cache; }
    const SlotBinding& binding(int64_t group) const { return *m_bindings.at(static_cast<size_t>(group)); }

private:
    const LayerGroups& m_groups;
    KvPools& m_pools;
    /// Stable addresses: the layers hold references to them.
    std::vector<std::unique_ptr<SlotBinding>> m_bindings;
    std::vector<PagedLayer*> m_paged;
    std::vector<size_t> m_linearLayers;
    std::unique_ptr<model::ModelCache> m_cache;
};

} // namespace kvscope::serving
