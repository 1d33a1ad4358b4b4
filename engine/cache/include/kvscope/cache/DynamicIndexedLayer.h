// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/cache/DynamicLayer.h"
#include "kvscope/cache/IndexedLayer.h"

namespace kvscope::cache {

/// A dynamic layer with a growing indexer key cache beside K and V (the release's `DynamicIndexedLayer`,
/// layer type `indexed_attention` of DeepSeek-V3.2 and GLM-MoE-DSA); every batch and crop operation
/// applies to both.
class DynamicIndexedLayer : public DynamicLayer, public IndexedLayer {
public:
    std::string typeName() const override { return "DynamicIndexedLayer"; }
    IndexedLayer* asIndexed() override { return this; }
    const IndexedLayer* asIndexed() const override { return this; }

    at::Tensor updateIndexer(const at::Tensor& indexerKeyStates) override;
    at::Tensor indexerKeys() const override { return m_indexerKeys; }

    /// Drops the indexer keys, as the release does (the key/value part follows DynamicLayer).
    void reset() override;
    void reorder(const at::Tensor& beamIdx) override;
    void crop(int64_t maxLength) override;
    void cropTokens(int64_t tokensToRemove) override;
    void batchRepeatInterleave(int64_t repeats) override;
    void batchSelectIndices(const at::Tensor& indices) override;
    void offload() override;
    void prefetch() override;
    int64_t storedBytes() const override;

private:
    /// Whether indexer keys hold any element (the release's `is_indexer_initialized and numel() > 0`).
    bool hasIndexerKeys() const { return m_indexerKeys.defined() && m_indexerKeys.numel() > 0; }

    at::Tensor m_indexerKeys;
};

} // namespace kvscope::cache
