// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/DynamicSlidingWindowLayer.h"

#include "kvscope/cache/CacheError.h"

#include <ATen/ATen.h>

#include <algorithm>

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
    if (m_recordPast) {
        // Everything stays until cropTokens; attention sees what the mask sizes announce: the window's
        // `W - 1` past tokens and the new ones (fewer while the layer holds fewer).
        const int64_t visible = m_slidingWindow - 1 + keyStates.size(2);
        const int64_t held = full.keys.size(2);
        if (visible >= held) {
            return full;
        }
        return {full.keys.narrow(2, held - visible, visible), full.values.narrow(2, held - visible, visible)};
    }
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

void DynamicSlidingWindowLayer::cropTokens(int64_t tokensToRemove) {
    if (seqLength() < m_slidingWindow) {
        // Nothing slid out yet: a full-attention layer's crop, and the count follows what is held.
        DynamicLayer::cropTokens(tokensToRemove);
        storedLengthForCrop(ErrorKind::Attribute);
        m_cumulativeLength = m_keys.length();
        return;
    }
    if (!m_recordPast) {
        throw CacheError(ErrorKind::Runtime,
                         "`crop` was called, but this DynamicSlidingWindowLayer does not track past states and has "
                         "seen its window (" + std::to_string(m_slidingWindow) + " tokens; " +
                             std::to_string(seqLength()) +
                             " seen): call activatePastRecording (`activate_past_recording()`) before the updates "
                             "to be rolled back");
    }
    if (tokensToRemove > 0) {
        throw CacheError(ErrorKind::Runtime,
                         "once its window is full, a DynamicSlidingWindowLayer can only be cropped by a negative "
                         "count of tokens to remove (or 0), got " + std::to_string(tokensToRemove));
    }
    const int64_t remove = -tokensToRemove;
    const int64_t held = storedLengthForCrop(ErrorKind::Type);
    // Python's `[-W + 1 - n : -n]` (`[-W + 1:]` for n == 0) on `held` tokens.
    auto clamp = [held](int64_t index) { return std::clamp<int64_t>(index < 0 ? held + index : index, 0, held); };
    const int64_t begin = m_slidingWindow == 1 && remove == 0 ? 0 : clamp(-m_slidingWindow + 1 - remove);
    const int64_t end = remove == 0 ? held : clamp(-remove);
    const int64_t kept = std::max<int64_t>(end - begin, 0);
    m_keys.truncate(begin + kept);
    m_keys.keepLast(kept);
    m_values.truncate(begin + kept);
    m_values.keepLast(kept);
    m_cumulativeLength -= remove;
}

} // namespace kvscope::cache
