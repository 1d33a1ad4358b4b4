// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/LinearAttentionAndStaticFullAttentionLayer.h"

#include "kvscope/cache/CacheError.h"

namespace kvscope::cache {

void LinearAttentionAndStaticFullAttentionLayer::reset() {
    m_linear.reset();
    StaticLayer::reset();
}

void LinearAttentionAndStaticFullAttentionLayer::reorder(const at::Tensor& beamIdx) {
    m_linear.reorder(beamIdx);
    StaticLayer::reorder(beamIdx);
}

void LinearAttentionAndStaticFullAttentionLayer::cropTokens(int64_t tokensToRemove) { m_linear.cropTokens(tokensToRemove); }

void LinearAttentionAndStaticFullAttentionLayer::activatePastRecording() {
    m_linear.activatePastRecording();
    StaticLayer::activatePastRecording();
}

void LinearAttentionAndStaticFullAttentionLayer::offload() {
    StaticLayer::offload();
    m_linear.offload();
}

void LinearAttentionAndStaticFullAttentionLayer::prefetch() {
    StaticLayer::prefetch();
    m_linear.prefetch();
}

} // namespace kvscope::cache
