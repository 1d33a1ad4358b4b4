// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/cache/CacheLayer.h"

namespace kvscope::cache {

/// A linear-attention layer's cache: a short convolution window and a recurrent state, both of fixed
/// shape (the reference's `LinearAttentionLayer`). After activatePastRecording it also keeps the conv
/// columns that updates pushed out, so that the release's cropTokens can roll the window back (the
/// recurrent state cannot be rolled back, in the release neither).
class LinearAttentionLayer : public CacheLayer {
public:
    std::string typeName() const override { return "LinearAttentionLayer"; }
    bool isCompileable() const override { return true; }
    LinearAttentionLayer* asLinearAttention() override { return this; }
    const LinearAttentionLayer* asLinearAttention() const override { return this; }

    /// Allocates the conv state from `convStates` and/or the recurrent state from `recurrentStates`
    /// (either may be undefined).
    void lazyInitialization(const at::Tensor& convStates, const at::Tensor& recurrentStates);
    /// Stores the first conv window, later rolls new columns in; returns the stored window.
    at::Tensor updateConvState(const at::Tensor& convStates);
    /// Copies the new recurrent state in place and returns it.
    at::Tensor updateRecurrentState(const at::Tensor& recurrentStates);
    bool hasPreviousState() const { return m_hasPreviousState; }
    at::Tensor convStates() const { return m_convStates; }
    at::Tensor recurrentStates() const { return m_recurrentStates; }
    bool isConvStatesInitialized() const { return m_convStates.defined(); }
    bool isRecurrentStatesInitialized() const { return m_recurrentStates.defined(); }
    std::optional<int64_t> convBatchSize() const;

    void reset() override;
    void reorder(const at::Tensor& beamIdx) override;
    /// A no-op, as in the reference: recurrent states cannot be cut back.
    void crop(int64_t) override {}
    /// The release's crop: refused unless recording the past or for a positive count; otherwise puts the
    /// conv window back to where it was `tokensToRemove` columns ago (0: the current window).
    void cropTokens(int64_t tokensToRemove) override;
    void activatePastRecording() override { m_recordPast = true; }
    bool recordsPast() const override { return m_recordPast; }
    /// Refused, as in the reference (it has no batch resizing for linear attention).
    void batchRepeatInterleave(int64_t repeats) override;
    void batchSelectIndices(const at::Tensor& indices) override;
    void offload() override;
    void prefetch() override;
    int64_t storedBytes() const override;
    std::optional<at::Device> homeDevice() const override { return m_device; }
    std::optional<at::Device> currentDevice() const override;

private:
    at::Tensor m_convStates;
    at::Tensor m_recurrentStates;
    /// While recording: every conv column since the last cropTokens, the current window at its end.
    at::Tensor m_convHistory;
    bool m_recordPast = false;
    bool m_hasPreviousState = false;
    int64_t m_convKernelSize = 0;
    std::optional<at::Device> m_device;
};

} // namespace kvscope::cache
