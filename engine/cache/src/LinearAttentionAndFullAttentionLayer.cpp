// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/LinearAttentionAndFullAttentionLayer.h"

namespace kvscope::cache {

void LinearAttentionAndFullAttentionLayer::reset() {
    m_linear.reset();
    DynamicLayer::reset();
}

void LinearAttentionAndFullAttentionLayer::reorder(const at::Tensor& beamIdx) {
    m_linear.reorder(beamIdx);
    DynamicLayer::reorder(beamIdx);
}

void LinearAttentionAndFullAttentionLayer::cropTokens(int64_t tokensToRemove) {
    m_linear.cropTokens(tokensToRemove);
    DynamicLayer::cropTokens(tokensToRemove);
}

} // namespace kvscope::cache
