// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/cache/StaticLayer.h"

namespace kvscope::cache {

/// A static layer holding the last `min(slidingWindow, maxCacheLen)` tokens (the reference's
/// `StaticSlidingWindowLayer`). The reference rolls the whole window for every decoded token; here
/// the window slides through a buffer twice its size and is compacted once per window, so a decode
/// step costs O(1) amortised while `keys()` and every returned tensor hold the reference's values.
class StaticSlidingWindowLayer : public StaticLayer {
public:
    StaticSlidingWindowLayer(int64_t maxCacheLen, int64_t slidingWindow);

    std::string typeName() const override { return "StaticSlidingWindowLayer"; }
    bool isSliding() const override { return true; }

    KeyValueStates update(const at::Tensor& keyStates, const at::Tensor& valueStates) override;
    MaskSizes maskSizes(int64_t queryLength) const override;
    int64_t seqLength() const override { return m_cumulativeLength; }
    void reset() override;

    /// The window as configured, before clipping to max_cache_len.
    int64_t slidingWindow() const { return m_slidingWindow; }

protected:
    void allocate(const at::Tensor& keyStates, const at::Tensor& valueStates) override;
    std::pair<at::Tensor&, at::Tensor&> ownedBuffers() override { return {m_backingKeys, m_backingValues}; }
    void buffersMoved() override { refreshWindow(); }

private:
    /// Re-points the window views at [m_windowStart, m_windowStart + window).
    void refreshWindow();
    /// Moves the window back to the buffer's start when it reaches the end.
    void compactIfAtEnd();

    int64_t m_slidingWindow;
    int64_t m_windowStart = 0;
    at::Tensor m_backingKeys;
    at::Tensor m_backingValues;
};

} // namespace kvscope::cache
