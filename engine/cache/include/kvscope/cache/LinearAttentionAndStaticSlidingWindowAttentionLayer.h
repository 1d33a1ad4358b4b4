// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/cache/StaticSlidingWindowLayer.h"
#include "kvscope/cache/LinearAttentionLayer.h"

namespace kvscope::cache {

/// A hybrid layer holding linear-attention states and a static sliding-window key/value cache (the
/// release's `LinearAttentionAndStaticSlidingWindowAttentionLayer`: a StaticCache's `hybrid_sliding` layers).
/// Its crop rolls back the linear-attention side only; offload and prefetch move that side only, as the
/// release's method resolution order does.
class LinearAttentionAndStaticSlidingWindowAttentionLayer : public StaticSlidingWindowLayer {
public:
    explicit LinearAttentionAndStaticSlidingWindowAttentionLayer(int64_t maxCacheLen, int64_t slidingWindow) : StaticSlidingWindowLayer(maxCacheLen, slidingWindow) {}

    std::string typeName() const override { return "LinearAttentionAndStaticSlidingWindowAttentionLayer"; }
    LinearAttentionLayer* asLinearAttention() override { return &m_linear; }
    const LinearAttentionLayer* asLinearAttention() const override { return &m_linear; }

    /// -1, as the release's method resolution order finds the linear-attention side's `get_max_length` first.
    int64_t maxCacheShape() const override { return -1; }

    void reset() override;
    void reorder(const at::Tensor& beamIdx) override;
    /// The release's crop: the linear-attention side first (refused unless recording the past); the static
    /// key/value side is not cropped.
    void cropTokens(int64_t tokensToRemove) override;
    void activatePastRecording() override;
    bool recordsPast() const override { return m_linear.recordsPast(); }
    void offload() override { m_linear.offload(); }
    void prefetch() override { m_linear.prefetch(); }
    int64_t storedBytes() const override { return StaticSlidingWindowLayer::storedBytes() + m_linear.storedBytes(); }

private:
    LinearAttentionLayer m_linear;
};

} // namespace kvscope::cache
