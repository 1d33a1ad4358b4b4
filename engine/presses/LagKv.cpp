// SPDX-License-Identifier: GPL-3.0-or-later
// LagKV (kvpress's LagKVPress): each partition scored against the next one's range.
#include "kvscope/config/PressRegistration.h"

KVSCOPE_PRESS_DESCRIPTION(lagkv) {
    kvscope::config::PressDescription press;
    press.name = "lagkv";
    press.referenceName = "LagKVPress";
    press.displayName = "LagKV";
    press.kind = "scorer";
    press.phase = "prefill";
    press.summary =
        "scores each lag_size partition against the next one's min-max range; sinks and the last partition kept";
    press.options = {{"n_sink", "int", "4", "first tokens always kept", /*belowPrompt=*/true},
                     {"lag_size", "int", "128", "tokens per partition; the next partition is the reference"},
                     {"cross_scoring", "bool", "false",
                      "rank by the raw lag scores instead of the rank inside each partition"}};
    press.sentence = "the first {n_sink} and the last partition stay; the {dropped} that varied least against "
                     "the next {lag_size}-token partition were dropped";
    press.policy.values = true;
    return press;
}

#if KVSCOPE_PRESS_ENGINE
#include "kvscope/press/PressFactory.h"

#include <ATen/ATen.h>
#include <stdexcept>

namespace kvscope::press {
namespace {

/// LagKV: scores each partition of `lagSize` tokens against the next one (the spread of its keys and
/// values min-max scaled by the next partition's range); the sinks and the last partition are kept.
class LagKvPress : public Press {
public:
    LagKvPress(int64_t sinkCount = 4, int64_t lagSize = 128, bool crossScoring = false);
    std::string name() const override { return "lagkv"; }
    std::string referenceName() const override { return "LagKVPress"; }
    PressReads reads() const override { return {true, false, false}; }
    at::Tensor score(const PressInputs& inputs, int64_t keptCount) const override;
    /// The lag scores [B, Hkv, (P - 1) L] of the scored partitions (the mean of the key and value softmaxes),
    /// before any ranking; undefined when the sequence is shorter than n_sink + 2 lag_size.
    at::Tensor lagScores(const PressInputs& inputs) const;
    /// `lag_scores` when defined.
    std::map<std::string, at::Tensor> details(const PressInputs& inputs) const override;

private:
    /// softmax over each partition of the unbiased channel std of (x - min_ref) / (max_ref - min_ref).
    at::Tensor statesScore(const at::Tensor& states, int64_t end) const;

    int64_t m_sinkCount;
    int64_t m_lagSize;
    bool m_crossScoring;
};

LagKvPress::LagKvPress(int64_t sinkCount, int64_t lagSize, bool crossScoring)
    : m_sinkCount(sinkCount), m_lagSize(lagSize), m_crossScoring(crossScoring) {
    if (lagSize < 1) {
        throw std::invalid_argument("LagKV's lag_size must be at least 1, got " + std::to_string(lagSize));
    }
}

at::Tensor LagKvPress::statesScore(const at::Tensor& states, int64_t end) const {
    const int64_t batch = states.size(0);
    const int64_t heads = states.size(1);
    const at::Tensor partitions = states.narrow(2, m_sinkCount, end - m_sinkCount)
                                      .reshape({batch, heads, -1, m_lagSize, states.size(3)});
    const int64_t count = partitions.size(2);
    const at::Tensor reference = partitions.narrow(2, 1, count - 1);
    const at::Tensor scored = partitions.narrow(2, 0, count - 1);
    const at::Tensor low = std::get<0>(reference.min(-2, /*keepdim=*/true));
    const at::Tensor high = std::get<0>(reference.max(-2, /*keepdim=*/true));
    return ((scored - low) / (high - low)).std(-1, /*unbiased=*/true).softmax(-1);
}

std::map<std::string, at::Tensor> LagKvPress::details(const PressInputs& inputs) const {
    std::map<std::string, at::Tensor> named;
    if (at::Tensor lag = lagScores(inputs); lag.defined()) {
        named["lag_scores"] = std::move(lag);
    }
    return named;
}

at::Tensor LagKvPress::lagScores(const PressInputs& inputs) const {
    const int64_t length = inputs.keys.size(2);
    if (length < m_sinkCount + 2 * m_lagSize) {
        return {};
    }
    const int64_t end = m_sinkCount + ((length - m_sinkCount) / m_lagSize) * m_lagSize;
    const at::Tensor scores = (statesScore(inputs.keys, end) + statesScore(inputs.values, end)) / 2;
    return scores.reshape({inputs.keys.size(0), inputs.keys.size(1), -1});
}

at::Tensor LagKvPress::score(const PressInputs& inputs, int64_t) const {
    require(inputs.values, "values", name());
    const at::Tensor& keys = inputs.keys;
    const int64_t batch = keys.size(0);
    const int64_t heads = keys.size(1);
    const int64_t length = keys.size(2);
    if (length < m_sinkCount + 2 * m_lagSize) {
        // Too short to partition: the sinks score 1 and the rest rise linearly with position.
        at::Tensor scores = at::ones({batch, heads, length}, keys.options());
        if (length > m_sinkCount) {
            const int64_t rest = length - m_sinkCount;
            scores.narrow(2, m_sinkCount, rest)
                .copy_((at::arange(rest, keys.options().dtype(at::kLong)).to(at::kFloat) /
                        static_cast<float>(rest))
                           .to(keys.scalar_type()));
        }
        return scores;
    }
    const int64_t end = m_sinkCount + ((length - m_sinkCount) / m_lagSize) * m_lagSize;
    const int64_t tail = m_lagSize + length - end;
    at::Tensor scores = (statesScore(keys, end) + statesScore(inputs.values, end)) / 2;
    if (!m_crossScoring) {
        // The rank inside the partition over lag_size: exact, but equal across partitions.
        scores = (scores.argsort(int64_t{-1}, false).argsort(int64_t{-1}, false).to(at::kFloat) /
                  static_cast<float>(m_lagSize))
                     .to(keys.scalar_type());
    }
    const at::Tensor sinks = at::ones({batch, heads, m_sinkCount}, scores.options());
    const at::Tensor last = at::ones({batch, heads, tail}, scores.options());
    return at::cat({sinks, scores.reshape({batch, heads, -1}), last}, -1);
}

} // namespace
} // namespace kvscope::press

KVSCOPE_PRESS_FACTORY(lagkv) {
    kvscope::press::PressFactory factory;
    factory.scorer = [](const kvscope::press::PressOptions& options) {
        return std::make_shared<kvscope::press::LagKvPress>(
            options.integer("n_sink", 0), options.integer("lag_size", 1), options.flag("cross_scoring"));
    };
    return factory;
}
#endif
