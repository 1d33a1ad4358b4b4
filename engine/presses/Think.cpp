// SPDX-License-Identifier: GPL-3.0-or-later
// ThinK (kvpress's ThinKPress): zeroes the key channels the last queries use least; no token is dropped.
#include "kvscope/config/PressRegistration.h"

KVSCOPE_PRESS_DESCRIPTION(think) {
    kvscope::config::PressDescription press;
    press.name = "think";
    press.referenceName = "ThinKPress";
    press.displayName = "ThinK";
    press.kind = "value-changing";
    press.phase = "prefill";
    press.summary = "zeroes the least used key channels per head (--ratio: the share of channels); keeps every token";
    press.options = {{"window_size", "int", "32", "recent queries whose norms score the channels", /*belowPrompt=*/true}};
    press.sentence = "it zeroed key channels of every head; every token stays and the cache keeps its size";
    press.policy.queries = true;
    press.policy.effect = "rewrites keys";
    return press;
}

#if KVSCOPE_PRESS_ENGINE
#include "kvscope/config/PressDescriptions.h"
#include "kvscope/model/TensorOps.h"
#include "kvscope/press/CachePress.h"
#include "kvscope/press/PressFactory.h"
#include "kvscope/press/TopKSelection.h"

#include <ATen/ATen.h>
#include <stdexcept>
#include <string>

namespace kvscope::press {
namespace {

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

ThinkPress::ThinkPress(double keyChannelRatio, int64_t windowSize)
    : m_keyChannelRatio(keyChannelRatio), m_windowSize(windowSize) {
    if (!(keyChannelRatio >= 0.0 && keyChannelRatio < 1.0)) {
        throw std::invalid_argument("ThinK's key_channel_compression_ratio must be in [0, 1), got " +
                                    std::to_string(keyChannelRatio));
    }
    if (windowSize < 1) {
        throw std::invalid_argument("ThinK's window_size must be at least 1, got " +
                                    std::to_string(windowSize));
    }
}

int64_t ThinkPress::prunedCount(int64_t headDim) const {
    return static_cast<int64_t>(static_cast<double>(headDim) * m_keyChannelRatio);
}

ChannelPruning ThinkPress::prune(const PressInputs& inputs) const {
    ChannelPruning pruning;
    pruning.keys = inputs.keys;
    const int64_t count = prunedCount(inputs.keys.size(3));
    if (m_keyChannelRatio == 0.0) {
        return pruning;
    }
    if (!inputs.hiddenStates.defined() || !inputs.queryWeight.defined() || !inputs.cos.defined()) {
        throw std::invalid_argument(
            "the ThinK press reads the layer's hidden states, query projection and rotary "
            "rows, which were not given");
    }
    const int64_t rows = inputs.hiddenStates.size(1);
    if (m_windowSize > rows) {
        throw std::invalid_argument(
            config::PressDescriptions::promptTooShort("ThinK", "window_size", m_windowSize, rows));
    }
    // The window's queries, rotated with the last rotary rows (one broadcast row while decoding).
    const int64_t rotaryRows = std::min(m_windowSize, inputs.cos.size(-2));
    const at::Tensor cos = inputs.cos.narrow(-2, inputs.cos.size(-2) - rotaryRows, rotaryRows).unsqueeze(1);
    const at::Tensor sin = inputs.sin.narrow(-2, inputs.sin.size(-2) - rotaryRows, rotaryRows).unsqueeze(1);
    PressInputs window = inputs;
    window.hiddenStates = inputs.hiddenStates.narrow(1, rows - m_windowSize, m_windowSize);
    const at::Tensor query = model::ops::splitHeads(
        model::ops::linear(window.hiddenStates, inputs.queryWeight, inputs.queryBias), inputs.numHeads);
    const at::Tensor normed =
        inputs.queryNormWeight.defined()
            ? model::ops::rmsNorm(query, inputs.queryNormWeight, inputs.normEpsilon, inputs.normAddsOne)
            : query;
    const at::Tensor rotated = model::ops::applyRotary(normed, cos, sin);
    const int64_t batch = inputs.keys.size(0);
    const int64_t kvHeads = inputs.keys.size(1);
    const int64_t dim = inputs.keys.size(3);
    const at::Tensor queryNorms = rotated.pow(2).mean(2).view({batch, kvHeads, -1, dim}).mean(2);
    pruning.channelScores = queryNorms * inputs.keys.pow(2).mean(2);
    pruning.prunedChannels = std::get<0>(at::sort(TopKSelection::smallest(pruning.channelScores, count), -1));
    at::Tensor keys = inputs.keys.clone();
    keys.scatter_(-1, pruning.prunedChannels.unsqueeze(2).expand({batch, kvHeads, keys.size(2), count}), 0.0);
    pruning.keys = keys;
    return pruning;
}

} // namespace
} // namespace kvscope::press

namespace {

using namespace kvscope::press;

/// After each layer's prefill, zeroes its least used key channels per head (--ratio of them).
class ThinkCachePress : public CachePress {
public:
    explicit ThinkCachePress(int64_t windowSize) : m_windowSize(windowSize) {}
    PressAction onPass(const PressInputs& inputs, const PressPass& pass) override {
        PressAction action;
        if (pass.index != 0 || pass.ratio <= 0.0) {
            return action;
        }
        const ThinkPress think(pass.ratio, m_windowSize);
        const ChannelPruning pruning = think.prune(inputs);
        if (!pruning.prunedChannels.defined() || pruning.prunedChannels.size(2) == 0) {
            return action; // int(D * ratio) is 0: kvpress returns the keys unchanged
        }
        action.keys = pruning.keys;
        // The event's prunedChannels (format 1.5) and the fixtures' fields.
        action.details["pruned_channels"] = pruning.prunedChannels;
        action.details["channel_scores"] = pruning.channelScores;
        action.details["n_pruned_channels"] = at::scalar_tensor(think.prunedCount(inputs.headDim), at::kLong);
        // kvpress's compression_ratio property: half the channel ratio (only keys lose channels).
        action.details["press_compression_ratio"] = at::scalar_tensor(think.reportedRatio(), at::kDouble);
        return action;
    }

private:
    int64_t m_windowSize;
};

} // namespace

KVSCOPE_PRESS_FACTORY(think) {
    PressFactory factory;
    factory.generation = [](const kvscope::config::PressSettings& settings) -> std::unique_ptr<CachePress> {
        const PressOptions options("think", kvscope::config::PressDescriptions::describe("think").options,
                                   settings.options);
        return std::make_unique<ThinkCachePress>(options.integer("window_size", 1));
    };
    return factory;
}
#endif
