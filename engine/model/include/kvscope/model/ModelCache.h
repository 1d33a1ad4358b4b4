// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kvscope::cache {
class Cache;
class EncoderDecoderCache;
} // namespace kvscope::cache

namespace kvscope::model {

/// The cache one generation runs on: a decoder-only model's Cache, or an encoder-decoder model's
/// EncoderDecoderCache (self-attention plus cross-attention). Batch and length operations go to
/// whichever it holds, with the reference's rules.
class ModelCache {
public:
    explicit ModelCache(std::unique_ptr<cache::Cache> decoderCache);
    explicit ModelCache(std::unique_ptr<cache::EncoderDecoderCache> encoderDecoderCache);
    ~ModelCache();
    ModelCache(const ModelCache&) = delete;
    ModelCache& operator=(const ModelCache&) = delete;

    /// The cache of the decoder's self-attention (the only one for decoder-only models).
    cache::Cache& selfAttention();
    const cache::Cache& selfAttention() const;
    /// Null for decoder-only models.
    cache::EncoderDecoderCache* encoderDecoder() { return m_encoderDecoder.get(); }
    const cache::EncoderDecoderCache* encoderDecoder() const { return m_encoderDecoder.get(); }
    /// Self-attention first, then cross-attention where there is one.
    std::vector<const cache::Cache*> caches() const;

    /// Tokens the decoder's layer 0 holds (the reference's `get_seq_length()`).
    int64_t seqLength() const;
    /// Tokens a cache press removed from `layer` (kvpress: kept tokens keep their positions, so the next
    /// token's position is seqLength() + evictedTokens(0)).
    int64_t evictedTokens(int64_t layer = 0) const;
    void addEvictedTokens(int64_t layer, int64_t tokens);
    /// Whether a press removed tokens from any layer.
    bool pressed() const { return !m_evicted.empty(); }
    /// The slots a masking press (AdaKV) hid from `layer`'s later queries, per KV head: [B, Hkv, L] true
    /// where the head no longer attends the slot (kvpress's masked_key_indices). Slots past L, appended
    /// afterwards, stay visible. Undefined when no press masked the layer, so unpressed runs pay nothing.
    const at::Tensor& maskedSlots(int64_t layer) const;
    void setMaskedSlots(int64_t layer, at::Tensor masked);
    /// Whether a press masked slots of any layer.
    bool masked() const { return !m_masked.empty(); }
    void reorder(const at::Tensor& beamIdx);
    void crop(int64_t maxLength);
    void batchRepeatInterleave(int64_t repeats);
    void reset();

    /// Empty when `batchRepeatInterleave` is possible, else why the reference refuses it.
    std::string batchResizeRefusal() const;
    /// Empty when cropping to `maxLength` is possible and exact, else why not (static layers cannot crop,
    /// linear-attention states cannot be cut back, sliding windows past their window lost tokens).
    std::string cropRefusal(int64_t maxLength) const;

private:
    std::unique_ptr<cache::Cache> m_decoder;
    std::unique_ptr<cache::EncoderDecoderCache> m_encoderDecoder;
    std::map<int64_t, int64_t> m_evicted;
    std::map<int64_t, at::Tensor> m_masked;
};

} // namespace kvscope::model
