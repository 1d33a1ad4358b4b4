// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/StaticSlidingWindowLayer.h"

#include "BatchIndex.h"
#include "TokenCopy.h"
#include "kvscope/cache/CacheError.h"
#include "kvscope/cache/SequenceBuffer.h"

#include <ATen/ATen.h>

namespace kvscope::cache {
namespace {

int64_t effectiveLength(int64_t maxCacheLen, int64_t slidingWindow) {
    if (slidingWindow < 1) {
        throw CacheError(ErrorKind::Value, "sliding_window must be >= 1, got " + std::to_string(slidingWindow));
    }
    return std::min(slidingWindow, maxCacheLen);
}

} // namespace

StaticSlidingWindowLayer::StaticSlidingWindowLayer(int64_t maxCacheLen, int64_t slidingWindow)
    : StaticLayer(effectiveLength(maxCacheLen, slidingWindow)), m_slidingWindow(slidingWindow) {}

void StaticSlidingWindowLayer::allocate(const at::Tensor& keyStates, const at::Tensor& valueStates) {
    m_backingKeys = at::zeros({m_batch, m_heads, 2 * m_maxCacheLen, keyStates.size(3)}, keyStates.options());
    m_backingValues = at::zeros({m_batch, m_heads, 2 * m_maxCacheLen, valueStates.size(3)}, valueStates.options());
    m_windowStart = 0;
    refreshWindow();
}

void StaticSlidingWindowLayer::refreshWindow() {
    m_keys = narrowTokens(m_backingKeys, m_windowStart, m_maxCacheLen);
    m_values = narrowTokens(m_backingValues, m_windowStart, m_maxCacheLen);
}

void StaticSlidingWindowLayer::compactIfAtEnd() {
    if (m_windowStart + m_maxCacheLen < 2 * m_maxCacheLen) {
        return;
    }
    // The window occupies exactly the second half, so the first half is free and does not overlap.
    m_backingKeys.narrow(2, 0, m_maxCacheLen).copy_(m_keys);
    m_backingValues.narrow(2, 0, m_maxCacheLen).copy_(m_values);
    m_windowStart = 0;
    refreshWindow();
}

KeyValueStates StaticSlidingWindowLayer::update(const at::Tensor& keyStates, const at::Tensor& valueStates) {
    checkFourDimensional(keyStates, "key_states");
    checkFourDimensional(valueStates, "value_states");
    if (!m_initialized) {
        lazyInitialization(keyStates, valueStates);
    }
    checkStates(keyStates, valueStates);
    const int64_t tokens = keyStates.size(2);
    const int64_t current = m_cumulativeLength;
    const int64_t window = m_maxCacheLen;
    const bool isFull = current >= window;

    at::Tensor fullKeys;
    at::Tensor fullValues;
    if (isFull) {
        if (tokens == 1) {
            // The reference rolls left by one and writes the last slot; sliding the view is the same.
            compactIfAtEnd();
            copyTokens(m_backingKeys, m_windowStart + window, keyStates);
            copyTokens(m_backingValues, m_windowStart + window, valueStates);
            ++m_windowStart;
            refreshWindow();
            m_cumulativeLength += tokens;
            return {m_keys, m_values};
        }
        if (window - 1 + tokens < window) {
            throw CacheError(ErrorKind::Runtime, "a full sliding window cannot take an update of " +
                                                     std::to_string(tokens) + " tokens (allowed: 1 or more)");
        }
        fullKeys = at::cat({m_keys.narrow(2, 1, window - 1), keyStates}, 2);
        fullValues = at::cat({m_values.narrow(2, 1, window - 1), valueStates}, 2);
    } else if (current + tokens > window) {
        if (current == 0) {
            fullKeys = keyStates;
            fullValues = valueStates;
        } else {
            fullKeys = at::cat({m_keys.narrow(2, 0, current), keyStates}, 2);
            fullValues = at::cat({m_values.narrow(2, 0, current), valueStates}, 2);
        }
    } else {
        copyTokens(m_keys, current, keyStates);
        copyTokens(m_values, current, valueStates);
        m_cumulativeLength += tokens;
        return {m_keys, m_values};
    }
    m_keys.copy_(fullKeys.narrow(2, fullKeys.size(2) - window, window));
    m_values.copy_(fullValues.narrow(2, fullValues.size(2) - window, window));
    m_cumulativeLength += tokens;
    return {fullKeys, fullValues};
}

MaskSizes StaticSlidingWindowLayer::maskSizes(int64_t queryLength) const {
    const int64_t window = m_maxCacheLen;
    const int64_t kvOffset = std::max<int64_t>(m_cumulativeLength - window + 1, 0);
    if (m_cumulativeLength >= window) {
        return {window + queryLength - 1, kvOffset};
    }
    if (m_cumulativeLength + queryLength > window) {
        return {m_cumulativeLength + queryLength, kvOffset};
    }
    return {window, kvOffset};
}

void StaticSlidingWindowLayer::reset() {
    if (m_initialized) {
        m_backingKeys.zero_();
        m_backingValues.zero_();
        m_windowStart = 0;
        refreshWindow();
    }
    m_cumulativeLength = 0;
}

} // namespace kvscope::cache
