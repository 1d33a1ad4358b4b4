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
#include "kvscope/press/CachePress.h"
#include "kvscope/press/PressFactory.h"
#include "kvscope/press/ThinkPress.h"

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
