#pragma once

#include "kvscope/cache/CacheLayer.h"
#include "kvscope/cache/KeyValueStates.h"
#include "kvscope/cache/MaskSizes.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kvscope::cache {

class AttentionLayer;

/// A model's cache: one layer cache per model layer, per-layer dispatch, and the offload policy
/// (the reference's `Cache`). Layers are either given up front or replicated lazily from a factory
/// as updates reach new layer indices.
class Cache {
public:
    using LayerFactory = std::function<std::unique_ptr<CacheLayer>()>;

    explicit Cache(std::vector<std::unique_ptr<CacheLayer>> layers, bool offloading = false,
                   bool offloadOnlyNonSliding = true);
    explicit Cache(LayerFactory layerToReplicate, bool offloading = false, bool offloadOnlyNonSliding = true);
    virtual ~Cache();
    Cache(const Cache&) = delete;
    Cache& operator=(const Cache&) = delete;

    virtual std::string typeName() const { return "Cache"; }

    /// Caches new key/value states `[batch, heads, tokens, head_dim]` for one layer and returns the
    /// states its attention uses; with offloading, prefetches the next layer and offloads this one.
    KeyValueStates update(const at::Tensor& keyStates, const at::Tensor& valueStates, int64_t layerIdx);
    at::Tensor updateConvState(const at::Tensor& convStates, int64_t layerIdx);
    at::Tensor updateRecurrentState(const at::Tensor& recurrentStates, int64_t layerIdx);
    /// Allocates every layer ahead of the first update (per-layer heads and head dims).
    void earlyInitialization(int64_t batchSize, const std::vector<int64_t>& numHeads,
                             const std::vector<int64_t>& headDims, at::ScalarType dtype, const at::Device& device);
    void earlyInitialization(int64_t batchSize, int64_t numHeads, int64_t headDim, at::ScalarType dtype,
                             const at::Device& device);

    /// Tokens seen by a layer; linear-attention layers redirect index 0 to the first attention layer.
    int64_t seqLength(int64_t layerIdx = 0) const;
    /// Whether a linear-attention layer holds state; without an index, the last such layer.
    bool hasPreviousState(std::optional<int64_t> layerIdx = std::nullopt) const;
    MaskSizes maskSizes(int64_t queryLength, int64_t layerIdx) const;
    int64_t maxCacheShape(int64_t layerIdx = 0) const;

    virtual void reset();
    virtual void reorder(const at::Tensor& beamIdx);
    virtual void crop(int64_t maxLength);
    virtual void batchRepeatInterleave(int64_t repeats);
    virtual void batchSelectIndices(const at::Tensor& indices);

    int64_t maxBatchSize() const;
    int64_t maxCacheLen() const;
    bool isCompileable() const;
    bool isInitialized() const;
    std::vector<bool> isSliding() const;

    size_t size() const { return m_layers.size(); }
    CacheLayer& layer(size_t index) { return *m_layers.at(index); }
    const CacheLayer& layer(size_t index) const { return *m_layers.at(index); }

    bool offloading() const { return m_offloading; }
    bool offloadOnlyNonSliding() const { return m_offloadOnlyNonSliding; }
    /// The layer the reference prefetches before updating `layerIdx`, or nothing where it would crash
    /// (every layer sliding while only non-sliding layers may move).
    std::optional<int64_t> prefetchTarget(int64_t layerIdx) const;
    /// Whether the reference offloads `layerIdx` after its update.
    bool offloadsAfterUpdate(int64_t layerIdx) const;

protected:
    /// Python list indexing: negative indices count from the end; out of range is an IndexError.
    size_t resolveIndex(int64_t layerIdx, const char* operation) const;
    /// The first attention layer, for calls on index 0 that land on a linear-attention layer.
    const AttentionLayer& attentionLayerFor(int64_t layerIdx, const char* operation) const;

    std::vector<std::unique_ptr<CacheLayer>> m_layers;
    LayerFactory m_layerToReplicate;
    bool m_offloading;
    bool m_offloadOnlyNonSliding;
};

} // namespace kvscope::cache
