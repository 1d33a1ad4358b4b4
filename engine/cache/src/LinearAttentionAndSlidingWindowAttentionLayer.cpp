// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/LinearAttentionAndSlidingWindowAttentionLayer.h"

#include "kvscope/cache/CacheError.h"

namespace kvscope::cache {

void LinearAttentionAndSlidingWindowAttentionLayer::reset() {
    m_linear.reset();
    DynamicSlidingWindowLayer::reset();
}

void LinearAttentionAndSlidingWindowAttentionLayer::reorder(const at::Tensor& beamIdx) {
    m_linear.reorder(beamIdx);
    DynamicSlidingWindowLayer::reorder(beamIdx);
}

void LinearAttentionAndSlidingWindowAttentionLayer::crop(int64_t) {
    throw CacheError(ErrorKind::Attribute,
                     "the seed's crop(max_length) does not know a LinearAttentionAndSlidingWindowAttentionLayer (a Transformers 5.18 class): crop it "
                     "by tokens to remove, the release's crop(tokens_to_remove) (Cache::cropTokens), after "
                     "activate_past_recording()");
}

void LinearAttentionAndSlidingWindowAttentionLayer::cropTokens(int64_t tokensToRemove) {
    m_linear.cropTokens(tokensToRemove);
    DynamicSlidingWindowLayer::cropTokens(tokensToRemove);
}

void LinearAttentionAndSlidingWindowAttentionLayer::activatePastRecording() {
    m_linear.activatePastRecording();
    DynamicSlidingWindowLayer::activatePastRecording();
}

} // namespace kvscope::cache
