// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/cache/DynamicLayer.h"

namespace kvscope::cache {

/// A dynamic layer that keeps only the last `slidingWindow - 1` tokens and returns them plus the new
/// ones (the reference's `DynamicSlidingWindowLayer`); also used for chunked attention. After
/// activatePastRecording (the release's speculative decoding) it keeps everything until the next cropTokens,
/// which rolls rejected tokens back and trims to the window again.
class DynamicSlidingWindowLayer : public DynamicLayer {
public:
    /// Refuses a window below 1 (the reference has no meaning for it).
    explicit DynamicSlidingWindowLayer(int64_t slidingWindow);

    std::string typeName() const override { return "DynamicSlidingWindowLayer"; }
    bool isSliding() const override { return true; }

    KeyValueStates update(const at::Tensor& keyStates, const at::Tensor& valueStates) override;
    MaskSizes maskSizes(int64_t queryLength) const override;
    int64_t seqLength() const override { return m_cumulativeLength; }
    int64_t maxCacheShape() const override { return m_slidingWindow; }
    void reset() override;
    void crop(int64_t maxLength) override;
    void cropTokens(int64_t tokensToRemove) override;
    void activatePastRecording() override { m_recordPast = true; }
    bool recordsPast() const override { return m_recordPast; }

    int64_t slidingWindow() const { return m_slidingWindow; }

private:
    int64_t m_slidingWindow;
    int64_t m_cumulativeLength = 0;
    bool m_recordPast = false;
};

} // namespace kvscope::cache
