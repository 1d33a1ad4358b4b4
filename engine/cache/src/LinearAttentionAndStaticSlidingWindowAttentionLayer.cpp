// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/LinearAttentionAndStaticSlidingWindowAttentionLayer.h"

#include "kvscope/cache/CacheError.h"

namespace kvscope::cache {

void LinearAttentionAndStaticSlidingWindowAttentionLayer::reset() {
    m_linear.reset();
    StaticSlidingWindowLayer::reset();
}

void LinearAttentionAndStaticSlidingWindowAttentionLayer::reorder(const at::Tensor& beamIdx) {
    m_linear.reorder(beamIdx);
    StaticSlidingWindowLayer::reorder(beamIdx);
}

void LinearAttentionAndStaticSlidingWindowAttentionLayer::cropTokens(int64_t tokensToRemove) { m_linear.cropTokens(tokensToRemove); }

void LinearAttentionAndStaticSlidingWindowAttentionLayer::activatePastRecording() {
    m_linear.activatePastRecording();
    StaticSlidingWindowLayer::activatePastRecording();
}

} // namespace kvscope::cache
