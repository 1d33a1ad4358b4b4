// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/press/PressInputs.h"
#include "kvscope/press/PressReads.h"

#include <ATen/core/Tensor.h>
#include <string>

namespace kvscope::press {

/// One ThinK pass on one layer: which key channels each KV head zeroes, and the keys after it.
struct ChannelPruning {
    /// qn * kn per channel [B, Hkv, D] (the smallest are pruned).
    at::Tensor channelScores;
    /// The zeroed channels [B, Hkv, n], ascending.
    at::Tensor prunedChannels;
    /// The keys with those channels zeroed [B, Hkv, T, D]; no token is dropped.
    at::Tensor keys;
};

/// ThinK: zeroes the `keyChannelRatio` of key channels per KV head that matter least to the last
/// `windowSize` queries (mean squared query times mean squared key per channel). Tokens all stay, so the
/// cache keeps its size: the channels are zeroed, not removed, and no memory is saved. kvpress reports a
/// compression ratio of key_channel_compression_ratio / 2.
class ThinkPress {
public:
    explicit ThinkPress(double keyChannelRatio = 0.0, int64_t windowSize = 32);
    std::string name() const { return "think"; }
    std::string referenceName() const { return "ThinKPress"; }
    PressReads reads() const { return {false, true, false}; }
    /// Channels pruned per head of `headDim`: int(D * ratio).
    int64_t prunedCount(int64_t headDim) const;
    /// kvpress's compression_ratio property (half the channel ratio: keys only).
    double reportedRatio() const { return m_keyChannelRatio / 2.0; }
    double keyChannelRatio() const { return m_keyChannelRatio; }
    /// The pruning of one layer; at ratio 0 (or no channel to prune) kvpress returns the keys unchanged and
    /// the pruning has no scores.
    ChannelPruning prune(const PressInputs& inputs) const;

private:
    double m_keyChannelRatio;
    int64_t m_windowSize;
};

} // namespace kvscope::press
