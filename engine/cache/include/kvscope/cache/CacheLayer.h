// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <string>

namespace kvscope::cache {

class AttentionLayer;
class LinearAttentionLayer;

/// One model layer's cache: the operations every layer kind shares (the reference's two mixins).
class CacheLayer {
public:
    virtual ~CacheLayer() = default;

    /// The reference's class name, e.g. "DynamicSlidingWindowLayer".
    virtual std::string typeName() const = 0;
    virtual bool isSliding() const { return false; }
    virtual bool isCompileable() const = 0;

    /// The attention (key/value) side of this layer, or null for pure linear-attention layers.
    virtual AttentionLayer* asAttention() { return nullptr; }
    virtual const AttentionLayer* asAttention() const { return nullptr; }
    /// The linear-attention (conv/recurrent state) side of this layer, or null.
    virtual LinearAttentionLayer* asLinearAttention() { return nullptr; }
    virtual const LinearAttentionLayer* asLinearAttention() const { return nullptr; }

    /// Zeroes the stored states and the counters, keeping the allocations.
    virtual void reset() = 0;
    /// Reorders the batch for beam search: row i becomes old row beamIdx[i].
    virtual void reorder(const at::Tensor& beamIdx) = 0;
    /// Keeps the first `maxLength` tokens; a negative value removes that many tokens (the seed's
    /// `crop(max_length)`: crop(0) empties the layer).
    virtual void crop(int64_t maxLength) = 0;
    /// The release's `crop(tokens_to_remove)` (Transformers 5.18): a negative value removes that many tokens
    /// (more than held empties the layer), 0 changes nothing but a recording layer's size, a positive value is
    /// the deprecated absolute length. Layers the release cannot crop refuse (the default: AttributeError, as
    /// the release's static layers have no `crop`).
    virtual void cropTokens(int64_t tokensToRemove);
    /// The release's `activate_past_recording()`: from now on sliding and linear-attention layers keep what
    /// an update pushes out of their window until the next cropTokens, so that speculative decoding can roll
    /// rejected tokens back. A no-op for layers that keep everything anyway.
    virtual void activatePastRecording() {}
    virtual bool recordsPast() const { return false; }
    virtual void batchRepeatInterleave(int64_t repeats) = 0;
    virtual void batchSelectIndices(const at::Tensor& indices) = 0;

    /// Moves the stored states to host memory (the reference's `offload`).
    virtual void offload() = 0;
    /// Moves offloaded states back to the layer's device (the reference's `prefetch`).
    virtual void prefetch() = 0;

    /// Bytes the layer's stored states occupy, wherever they are.
    virtual int64_t storedBytes() const = 0;
    /// The device the layer's states live on while not offloaded.
    virtual std::optional<at::Device> homeDevice() const = 0;
    /// The device the states are on now (differs from homeDevice() while offloaded).
    virtual std::optional<at::Device> currentDevice() const = 0;
};

} // namespace kvscope::cache
