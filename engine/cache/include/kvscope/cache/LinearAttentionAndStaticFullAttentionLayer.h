// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/cache/StaticLayer.h"
#include "kvscope/cache/LinearAttentionLayer.h"

namespace kvscope::cache {

/// A hybrid layer holding linear-attention states and a static key/value cache (the release's
/// `LinearAttentionAndStaticFullAttentionLayer`: a StaticCache's `hybrid` layers). Its crop rolls back the
/// linear-attention side only, as the release's method resolution order does.
class LinearAttentionAndStaticFullAttentionLayer : public StaticLayer {
public:
    explicit LinearAttentionAndStaticFullAttentionLayer(int64_t maxCacheLen) : StaticLayer(maxCacheLen) {}

    std::string typeName() const override { return "LinearAttentionAndStaticFullAttentionLayer"; }
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
    void offload() override;
    void prefetch() override;
    int64_t storedBytes() const override { return StaticLayer::storedBytes() + m_linear.storedBytes(); }

private:
    LinearAttentionLayer m_linear;
};

} // namespace kvscope::cache
