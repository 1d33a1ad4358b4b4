// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/cache/CacheLayer.h"
#include "kvscope/cache/KeyValueStates.h"
#include "kvscope/cache/MaskSizes.h"

namespace kvscope::cache {

class IndexedLayer;

/// A layer that caches attention keys and values (the reference's `CacheLayerMixin`).
class AttentionLayer : public CacheLayer {
public:
    AttentionLayer* asAttention() override { return this; }
    const AttentionLayer* asAttention() const override { return this; }
    /// The indexer key cache of a sparse-attention layer, or null.
    virtual IndexedLayer* asIndexed() { return nullptr; }
    virtual const IndexedLayer* asIndexed() const { return nullptr; }

    /// Allocates from the shapes, dtype and device of these states (a zero-length sequence is fine).
    virtual void lazyInitialization(const at::Tensor& keyStates, const at::Tensor& valueStates) = 0;
    /// Caches new states `[batch, heads, tokens, head_dim]` and returns the states attention uses.
    virtual KeyValueStates update(const at::Tensor& keyStates, const at::Tensor& valueStates) = 0;
    /// Mask length and offset for the next update of `queryLength` tokens.
    virtual MaskSizes maskSizes(int64_t queryLength) const = 0;
    /// Tokens seen (for sliding layers: all tokens ever seen, not only those stored).
    virtual int64_t seqLength() const = 0;
    /// Maximum tokens held, or -1 when unbounded.
    virtual int64_t maxCacheShape() const = 0;
    virtual bool isInitialized() const = 0;

    /// The stored keys/values as the reference holds them in `self.keys`/`self.values` (undefined
    /// before initialisation). For a quantized layer this is the full-precision residual.
    virtual at::Tensor keys() const = 0;
    virtual at::Tensor values() const = 0;
    /// Tokens physically held (the stored sequence length).
    virtual int64_t storedTokens() const = 0;

    /// Batch size of the allocated states, where the reference defines `max_batch_size`.
    virtual std::optional<int64_t> maxBatchSize() const { return std::nullopt; }
    /// Preallocated length, where the reference defines `max_cache_len`.
    virtual std::optional<int64_t> maxCacheLen() const { return std::nullopt; }
    /// Keeps only the tokens at `indices` [batch, heads, kept] (per head, in that order): a cache press's
    /// eviction. The layer then holds `kept` tokens. Layers that cannot refuse with a CacheError saying why.
    virtual void keepTokens(const at::Tensor& indices);
    /// Replaces every stored key with `keys` [batch, heads, stored, head_dim] (the same shape): a press that
    /// rewrites keys rather than dropping tokens (ThinK zeroes channels). Layers that cannot refuse likewise.
    virtual void rewriteKeys(const at::Tensor& keys);
};

} // namespace kvscope::cache
