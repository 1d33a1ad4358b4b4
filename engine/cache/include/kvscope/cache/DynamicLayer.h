// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/cache/AttentionLayer.h"
#include "kvscope/cache/CacheError.h"
#include "kvscope/cache/SequenceBuffer.h"

namespace kvscope::cache {

/// A layer whose cache grows with every token (the reference's default `DynamicLayer`).
/// Appends go into an amortised buffer, so an update costs O(new tokens) instead of a re-concatenation.
class DynamicLayer : public AttentionLayer {
public:
    std::string typeName() const override { return "DynamicLayer"; }
    bool isCompileable() const override { return false; }

    void lazyInitialization(const at::Tensor& keyStates, const at::Tensor& valueStates) override;
    KeyValueStates update(const at::Tensor& keyStates, const at::Tensor& valueStates) override;
    MaskSizes maskSizes(int64_t queryLength) const override;
    int64_t seqLength() const override;
    int64_t maxCacheShape() const override { return -1; }
    bool isInitialized() const override { return m_initialized; }
    at::Tensor keys() const override { return m_keys.view(); }
    at::Tensor values() const override { return m_values.view(); }
    int64_t storedTokens() const override { return m_keys.length(); }

    void reset() override;
    void reorder(const at::Tensor& beamIdx) override;
    void crop(int64_t maxLength) override;
    void cropTokens(int64_t tokensToRemove) override;
    void batchRepeatInterleave(int64_t repeats) override;
    void batchSelectIndices(const at::Tensor& indices) override;
    void keepTokens(const at::Tensor& indices) override;
    void rewriteKeys(const at::Tensor& keys) override;
    void offload() override;
    void prefetch() override;
    int64_t storedBytes() const override { return m_keys.bytes() + m_values.bytes(); }
    std::optional<at::Device> homeDevice() const override;
    std::optional<at::Device> currentDevice() const override;

protected:
    /// Number of stored tokens as the reference's `keys.shape[-2]`, refusing where Python would fail.
    int64_t storedLengthForCrop(ErrorKind uninitialisedKind) const;
    /// The tokens the release's `crop(tokens_to_remove)` removes from a sequence of `length` tokens
    /// (0: nothing; a positive argument is the deprecated absolute length).
    static int64_t releaseTokensToRemove(int64_t tokensToRemove, int64_t length);

    SequenceBuffer m_keys;
    SequenceBuffer m_values;
    bool m_initialized = false;
    std::optional<at::Device> m_device;
};

} // namespace kvscope::cache
