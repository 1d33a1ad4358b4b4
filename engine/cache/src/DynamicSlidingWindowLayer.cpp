// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/DynamicSlidingWindowLayer.h"

#include "kvscope/cache/CacheError.h"

#include <ATen/ATen.h>

namespace kvscope::cache {

DynamicSlidingWindowLayer::DynamicSlidingWindowLayer(int64_t slidingWindow) : m_slidingWindow(slidingWindow) {
    if (slidingWindow < 1) {
        throw CacheError(ErrorKind::Value,
                         "sliding_window must be >= 1 (tokens a query may see), got " + std::to_string(slidingWindow));
    }
}

KeyValueStates DynamicSlidingWindowLayer::update(const at::Tensor& keyStates, const at::Tensor& valueStates) {
    KeyValueStates full = DynamicLayer::update(keyStates, valueStates);
    m_cumulativeLength += keyStates.size(2);
    // Python's `[-(W - 1):]` with W == 1 is `[0:]`: a window of one keeps everything (reference quirk).
    if (m_slidingWindow > 1) {
        m_keys.keepLast(m_slidingWindow - 1);
        m_values.keepLast(m_slidingWindow - 1);
    }
    return full;
}

MaskSizes DynamicSlidingWindowLayer::maskSizes(int64_t queryLength) const {
    const bool isFull = m_cumulativeLength >= m_slidingWindow;
    const int64_t kvOffset = std::max<int64_t>(m_cumulativeLength - m_slidingWindow + 1, 0);
    const int64_t kvLength = isFull ? m_slidingWindow - 1 + queryLength : m_cumulativeLength + queryLength;
    return {kvLength, kvOffset};
}

void DynamicSlidingWindowLayer::reset() {
    DynamicLayer::reset();
    m_cumulativeLength = 0;
}

void DynamicSlidingWindowLayer::crop(int64_t maxLength) {
    if (seqLength() >= m_slidingWindow) {
        throw CacheError(ErrorKind::Value,
                         "Cannot `crop` a `DynamicSlidingWindowLayer` after it has seen more tokens than its sliding "
                         "window (otherwise some states are lost): seen " +
                             std::to_string(seqLength()) + ", window " + std::to_string(m_slidingWindow));
    }
    DynamicLayer::crop(maxLength);
    // The reference reads `keys.shape[-2]` afterwards, so an empty layer refuses even a no-op crop
    // (on `None`: an AttributeError).
    storedLengthForCrop(ErrorKind::Attribute);
    m_cumulativeLength = m_keys.length();
}

} // namespace kvscope::cache
