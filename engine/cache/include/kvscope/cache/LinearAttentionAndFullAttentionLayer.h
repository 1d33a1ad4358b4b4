// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/cache/DynamicLayer.h"
#include "kvscope/cache/LinearAttentionLayer.h"

namespace kvscope::cache {

/// A hybrid layer holding both linear-attention states and a dynamic key/value cache (the reference's
/// `LinearAttentionAndFullAttentionLayer`). Where the reference's method resolution order picks the
/// linear-attention side (crop, offload, prefetch), so does this class.
class LinearAttentionAndFullAttentionLayer : public DynamicLayer {
public:
    std::string typeName() const override { return "LinearAttentionAndFullAttentionLayer"; }
    LinearAttentionLayer* asLinearAttention() override { return &m_linear; }
    const LinearAttentionLayer* asLinearAttention() const override { return &m_linear; }

    void reset() override;
    void reorder(const at::Tensor& beamIdx) override;
    /// A no-op: the reference resolves `crop` to the linear-attention mixin.
    void crop(int64_t) override {}
    /// The release's crop: the linear-attention side first (refused unless recording the past), then the
    /// key/value side.
    void cropTokens(int64_t tokensToRemove) override;
    void activatePastRecording() override { m_linear.activatePastRecording(); }
    bool recordsPast() const override { return m_linear.recordsPast(); }
    void offload() override { m_linear.offload(); }
    void prefetch() override { m_linear.prefetch(); }
    int64_t storedBytes() const override { return DynamicLayer::storedBytes() + m_linear.storedBytes(); }

private:
    LinearAttentionLayer m_linear;
};

} // namespace kvscope::cache
