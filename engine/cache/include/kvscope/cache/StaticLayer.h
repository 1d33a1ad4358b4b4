// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/cache/AttentionLayer.h"

#include <utility>

namespace kvscope::cache {

/// A layer with a preallocated `[batch, heads, max_cache_len, head_dim]` buffer written in place
/// (the reference's `StaticLayer`); writing past the end is refused.
class StaticLayer : public AttentionLayer {
public:
    explicit StaticLayer(int64_t maxCacheLen);

    std::string typeName() const override { return "StaticLayer"; }
    bool isCompileable() const override { return true; }

    void lazyInitialization(const at::Tensor& keyStates, const at::Tensor& valueStates) override;
    KeyValueStates update(const at::Tensor& keyStates, const at::Tensor& valueStates) override;
    MaskSizes maskSizes(int64_t queryLength) const override { return {m_maxCacheLen, 0}; }
    int64_t seqLength() const override { return m_initialized ? m_cumulativeLength : 0; }
    int64_t maxCacheShape() const override { return m_maxCacheLen; }
    bool isInitialized() const override { return m_initialized; }
    at::Tensor keys() const override { return m_keys; }
    at::Tensor values() const override { return m_values; }
    int64_t storedTokens() const override { return std::min(seqLength(), m_maxCacheLen); }
    std::optional<int64_t> maxBatchSize() const override;
    std::optional<int64_t> maxCacheLen() const override { return m_maxCacheLen; }

    void reset() override;
    void reorder(const at::Tensor& beamIdx) override;
    /// Refused, as in the reference (a static layer has no crop or batch resizing).
    void crop(int64_t maxLength) override;
    void batchRepeatInterleave(int64_t repeats) override;
    void batchSelectIndices(const at::Tensor& indices) override;
    void offload() override;
    void prefetch() override;
    int64_t storedBytes() const override;
    std::optional<at::Device> homeDevice() const override { return m_device; }
    std::optional<at::Device> currentDevice() const override;

protected:
    /// Checks batch, heads and head dims against the allocated buffers.
    void checkStates(const at::Tensor& keyStates, const at::Tensor& valueStates) const;
    [[noreturn]] void refuseUnsupported(const char* operation) const;
    /// Allocates the buffers with `slots` positions; sliding layers allocate twice their window.
    virtual void allocate(const at::Tensor& keyStates, const at::Tensor& valueStates);
    /// The tensors the layer owns, which reorder, offload and prefetch move: the keys and values here,
    /// the 2W backing buffers in the sliding subclass (whose keys/values are views into them).
    virtual std::pair<at::Tensor&, at::Tensor&> ownedBuffers() { return {m_keys, m_values}; }
    /// Called after ownedBuffers() were replaced, so that views into them can be re-derived.
    virtual void buffersMoved() {}

    int64_t m_maxCacheLen;
    int64_t m_cumulativeLength = 0;
    bool m_initialized = false;
    std::optional<at::Device> m_device;
    int64_t m_batch = 0;
    int64_t m_heads = 0;
    at::Tensor m_keys;
    at::Tensor m_values;
};

} // namespace kvscope::cache
