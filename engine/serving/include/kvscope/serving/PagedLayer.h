// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/cache/AttentionLayer.h"
#include "kvscope/cache/LinearAttentionLayer.h"
#include "kvscope/serving/SlotBinding.h"

#include <memory>

namespace kvscope::serving {

/// One layer of one request's cache over a shared paged pool: update() writes the new keys/values into
/// the slots of the request's blocks and returns the rows its attention needs, gathered by block table
/// in position order (a sliding or chunked group from its window's start, with that kv offset in
/// maskSizes). The binding (the request's slots for this pass) is owned by the request's cache and
/// shared by the layers of a group. A hybrid layer also keeps the request's linear-attention state.
/// Beam, crop, press and offload operations are refused: paged blocks are managed by block tables.
class PagedLayer : public cache::AttentionLayer {
public:
    /// `keyPool`/`valuePool`: [numBlocks, blockSize, kvHeads, headDim]; `binding` must outlive the layer.
    PagedLayer(const at::Tensor& keyPool, const at::Tensor& valuePool, const SlotBinding& binding,
               bool sliding, bool hybrid);

    std::string typeName() const override { return "PagedLayer"; }
    bool isSliding() const override { return m_sliding; }
    bool isCompileable() const override { return false; }
    cache::LinearAttentionLayer* asLinearAttention() override { return m_linear.get(); }
    const cache::LinearAttentionLayer* asLinearAttention() const override { return m_linear.get(); }

    /// A new pass: the binding now describes it.
    void beginPass() { m_updated = false; }
    /// Forgets the linear-attention state (a request restarting from its first token).
    void restart();

    void lazyInitialization(const at::Tensor&, const at::Tensor&) override {}
    cache::KeyValueStates update(const at::Tensor& keyStates, const at::Tensor& valueStates) override;
    cache::MaskSizes maskSizes(int64_t queryLength) const override;
    int64_t seqLength() const override;
    int64_t maxCacheShape() const override { return -1; }
    bool isInitialized() const override { return true; }
    /// The rows the last update returned ([1, kvHeads, rows, headDim]).
    at::Tensor keys() const override { return m_lastKeys; }
    at::Tensor values() const override { return m_lastValues; }
    int64_t storedTokens() const override { return m_lastKeys.defined() ? m_lastKeys.size(2) : 0; }

    void reset() override;
    void reorder(const at::Tensor& beamIdx) override;
    void crop(int64_t maxLength) override;
    void batchRepeatInterleave(int64_t repeats) override;
    void batchSelectIndices(const at::Tensor& indices) override;
    void keepTokens(const at::Tensor& indices) override;
    void offload() override;
    void prefetch() override;
    int64_t storedBytes() const override;
    std::optional<at::Device> homeDevice() const override { return m_keyPool.device(); }
    std::optional<at::Device> currentDevice() const override { return m_keyPool.device(); }

private:
    [[noreturn]] void refuse(const char* operation) const;

    at::Tensor m_keyPool; ///< [numBlocks * blockSize, kvHeads, headDim], a view of the pool
    at::Tensor m_valuePool;
    const SlotBinding& m_binding;
    bool m_sliding;
    bool m_updated = false;
    at::Tensor m_lastKeys;
    at::Tensor m_lastValues;
    std::unique_ptr<cache::LinearAttentionLayer> m_linear;
};

} // namespace kvscope::serving
