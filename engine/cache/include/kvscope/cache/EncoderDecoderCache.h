// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/cache/Cache.h"

#include <map>
#include <memory>

namespace kvscope::cache {

/// A self-attention cache and a cross-attention cache side by side (the reference's
/// `EncoderDecoderCache`); `isUpdated` tells per layer whether the cross-attention states are filled.
class EncoderDecoderCache {
public:
    EncoderDecoderCache(std::unique_ptr<Cache> selfAttentionCache, std::unique_ptr<Cache> crossAttentionCache);

    Cache& selfAttentionCache() { return *m_selfAttention; }
    Cache& crossAttentionCache() { return *m_crossAttention; }
    const Cache& selfAttentionCache() const { return *m_selfAttention; }
    const Cache& crossAttentionCache() const { return *m_crossAttention; }

    bool isUpdated(int64_t layerIdx) const;
    void setUpdated(int64_t layerIdx, bool updated) { m_isUpdated[layerIdx] = updated; }
    const std::map<int64_t, bool>& isUpdatedMap() const { return m_isUpdated; }

    size_t size() const { return m_selfAttention->size(); }
    int64_t seqLength(int64_t layerIdx = 0) const { return m_selfAttention->seqLength(layerIdx); }
    MaskSizes maskSizes(int64_t queryLength, int64_t layerIdx) const;
    int64_t maxCacheShape() const { return m_selfAttention->maxCacheShape(); }
    std::vector<bool> isSliding() const { return m_selfAttention->isSliding(); }
    bool isCompileable() const { return m_selfAttention->isCompileable(); }

    void reset();
    void reorder(const at::Tensor& beamIdx);
    /// Crops the self-attention cache only (the cross-attention states cover the whole encoder input).
    void crop(int64_t maximumLength);
    void batchRepeatInterleave(int64_t repeats);
    void batchSelectIndices(const at::Tensor& indices);

private:
    /// Refuses crop and batch operations unless both caches are dynamic, as the reference does.
    void checkDynamicCache(const char* method) const;

    std::unique_ptr<Cache> m_selfAttention;
    std::unique_ptr<Cache> m_crossAttention;
    std::map<int64_t, bool> m_isUpdated;
};

} // namespace kvscope::cache
