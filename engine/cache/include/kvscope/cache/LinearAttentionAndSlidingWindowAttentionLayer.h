// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/cache/DynamicSlidingWindowLayer.h"
#include "kvscope/cache/LinearAttentionLayer.h"

namespace kvscope::cache {

/// A hybrid layer holding linear-attention states and a sliding-window key/value cache (the release's
/// `LinearAttentionAndSlidingWindowAttentionLayer`, layer type `hybrid_sliding`). Offload and prefetch
/// move the linear-attention states only, as the release's method resolution order does.
class LinearAttentionAndSlidingWindowAttentionLayer : public DynamicSlidingWindowLayer {
public:
    explicit LinearAttentionAndSlidingWindowAttentionLayer(int64_t slidingWindow) : DynamicSlidingWindowLayer(slidingWindow) {}

    std::string typeName() const override { return "LinearAttentionAndSlidingWindowAttentionLayer"; }
    bool isCompileable() const override { return false; }
    LinearAttentionLayer* asLinearAttention() override { return &m_linear; }
    const LinearAttentionLayer* asLinearAttention() const override { return &m_linear; }

    /// -1, as the release's method resolution order finds the linear-attention side's `get_max_length` first.
    int64_t maxCacheShape() const override { return -1; }

    void reset() override;
    void reorder(const at::Tensor& beamIdx) override;
    /// Refused: the seed has no such class, and the release crops by tokens to remove (cropTokens).
    void crop(int64_t maxLength) override;
    /// The release's crop: the linear-attention side first (refused unless recording the past), then the
    /// key/value side.
    void cropTokens(int64_t tokensToRemove) override;
    void activatePastRecording() override;
    bool recordsPast() const override { return m_linear.recordsPast(); }
    void offload() override { m_linear.offload(); }
    void prefetch() override { m_linear.prefetch(); }
    int64_t storedBytes() const override { return DynamicSlidingWindowLayer::storedBytes() + m_linear.storedBytes(); }

private:
    LinearAttentionLayer m_linear;
};

} // namespace kvscope::cache
