// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/cache/IndexedLayer.h"
#include "kvscope/cache/StaticLayer.h"

namespace kvscope::cache {

/// A static layer with a preallocated indexer key buffer `[batch, max_cache_len, index_head_dim]` written
/// in place (the release's `StaticIndexedLayer`, the static cache's `indexed_attention` layers).
class StaticIndexedLayer : public StaticLayer, public IndexedLayer {
public:
    explicit StaticIndexedLayer(int64_t maxCacheLen) : StaticLayer(maxCacheLen) {}

    std::string typeName() const override { return "StaticIndexedLayer"; }
    IndexedLayer* asIndexed() override { return this; }
    const IndexedLayer* asIndexed() const override { return this; }

    /// Writes at the indexer's own count and returns the whole buffer; writing past the end is refused.
    at::Tensor updateIndexer(const at::Tensor& indexerKeyStates) override;
    at::Tensor indexerKeys() const override { return m_indexerKeys; }
    int64_t indexerLength() const { return m_indexerLength; }

    void reset() override;
    void reorder(const at::Tensor& beamIdx) override;
    int64_t storedBytes() const override;

private:
    at::Tensor m_indexerKeys;
    int64_t m_indexerLength = 0;
};

} // namespace kvscope::cache
