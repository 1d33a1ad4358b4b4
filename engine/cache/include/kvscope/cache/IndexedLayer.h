// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace kvscope::cache {

/// The indexer key cache beside K and V of a sparse-attention layer (DeepSeek-V3.2, GLM-MoE-DSA): one
/// single-head key `[batch, tokens, index_head_dim]` per token, which the indexer scores to pick the tokens
/// attention reads (the release's `update_indexer`).
class IndexedLayer {
public:
    virtual ~IndexedLayer() = default;
    /// Caches new indexer keys `[batch, tokens, index_head_dim]` and returns what the indexer reads.
    virtual at::Tensor updateIndexer(const at::Tensor& indexerKeyStates) = 0;
    /// The indexer keys held (undefined before the first updateIndexer).
    virtual at::Tensor indexerKeys() const = 0;
};

} // namespace kvscope::cache
