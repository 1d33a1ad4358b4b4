// SPDX-License-Identifier: GPL-3.0-or-later
// SimLayerKV (kvpress's SimLayerKVPress): a lazy layer keeps only its initial and recent tokens.
#include "kvscope/config/PressRegistration.h"

KVSCOPE_PRESS_DESCRIPTION(simlayerkv) {
    kvscope::config::PressDescription press;
    press.name = "simlayerkv";
    press.referenceName = "SimLayerKVPress";
    press.displayName = "SimLayerKV";
    press.kind = "layer"; // one keep-or-not decision per layer: not a scorer a wrapper can take as its base
    press.phase = "prefill";
    press.summary = "a lazy layer (attention on initial and recent tokens) keeps only those; others keep all";
    press.options = {{"lazy_threshold", "float", "1", "lazy when the initial+recent attention exceeds it; 1 disables"},
                     {"n_last", "int", "1", "last queries whose attention decides"},
                     {"n_recent", "int", "1024", "recent tokens a lazy layer keeps (n_recent - n_last of them)"},
                     {"n_initial", "int", "4", "initial tokens a lazy layer keeps"}};
    press.sentence =
        "the layer is lazy (its last {n_last} queries put more than {lazy_threshold} of their attention "
        "on the first {n_initial} and the recent tokens): it keeps only those, the {dropped} others were "
        "dropped";
    press.keptAllSentence =
        "the layer is not lazy (its last {n_last} queries put at most {lazy_threshold} of their "
        "attention on the first {n_initial} and the last {n_recent} tokens), so it keeps every "
        "token";
    press.policy.queries = true;
    return press;
}

#if KVSCOPE_PRESS_ENGINE
#include "kvscope/config/PressDescriptions.h"
#include "kvscope/press/CachePress.h"
#include "kvscope/press/PressFactory.h"
#include "kvscope/press/SnapKvPress.h"

#include <ATen/ATen.h>
#include <algorithm>
#include <stdexcept>
#include <string>

namespace kvscope::press {
namespace {

/// One SimLayerKV decision on one layer (one for the whole batch).
struct LazyLayerDecision {
    /// The attention the last `n_last` queries give the initial and recent tokens, when measured (not with
    /// threshold 1 or too short a sequence).
    double lazyScore = 0.0;
    bool measured = false;
    bool lazy = false;
    /// Kept slots [B, Hkv, n] in position order: the initial and recent tokens if lazy, else all.
    at::Tensor keptIndices;
    /// kvpress's bookkeeping (T - n_initial - n_recent + 1) / T for a lazy layer, 0 otherwise.
    double reportedRatio = 0.0;
};

/// SimLayerKV: a layer whose last queries attend mostly to the initial and recent tokens is "lazy" and
/// keeps only those; other layers keep everything. `lazyThreshold` 1 disables it.
class SimLayerKvPress {
public:
    SimLayerKvPress(double lazyThreshold = 1.0, int64_t lastCount = 1, int64_t recentCount = 1024,
                    int64_t initialCount = 4);
    std::string name() const { return "simlayerkv"; }
    std::string referenceName() const { return "SimLayerKVPress"; }
    PressReads reads() const { return {false, true, false}; }
    LazyLayerDecision decide(const PressInputs& inputs) const;
    /// The attention (mean over batch, heads and the last n_last queries) on the first n_initial and the
    /// last n_recent of the columns SnapKV's window attention keeps.
    double lazyScore(const PressInputs& inputs) const;
    /// Whether a layer of `length` tokens is measured at all (kvpress leaves shorter ones and threshold 1).
    bool measures(int64_t length) const;

private:
    double m_lazyThreshold;
    int64_t m_lastCount;
    int64_t m_recentCount;
    int64_t m_initialCount;
};

/// The start of Python's `x[s:]` on a sequence of `length`.
int64_t sliceStart(int64_t start, int64_t length) {
    return start < 0 ? std::max<int64_t>(0, length + start) : std::min(start, length);
}


SimLayerKvPress::SimLayerKvPress(double lazyThreshold, int64_t lastCount, int64_t recentCount,
                                 int64_t initialCount)
    : m_lazyThreshold(lazyThreshold), m_lastCount(lastCount), m_recentCount(recentCount),
      m_initialCount(initialCount) {
    if (!(lazyThreshold >= 0.0 && lazyThreshold <= 1.0)) {
        throw std::invalid_argument("SimLayerKV's lazy_threshold must be in [0, 1] (1 disables it), got " +
                                    std::to_string(lazyThreshold));
    }
    if (lastCount < 1 || recentCount < 0 || initialCount < 0) {
        throw std::invalid_argument("SimLayerKV needs n_last >= 1, n_recent >= 0 and n_initial >= 0");
    }
}

bool SimLayerKvPress::measures(int64_t length) const {
    return m_lazyThreshold != 1.0 && length > m_initialCount + m_recentCount + m_lastCount;
}

double SimLayerKvPress::lazyScore(const PressInputs& inputs) const {
    // SnapKV's window attention of the last n_last queries, averaged over batch, heads and queries, in
    // float32.
    const at::Tensor vector = SnapKvPress::windowAttention(inputs, m_lastCount).mean({0, 1, 2});
    const int64_t columns = vector.size(0);
    const int64_t initial = std::min(m_initialCount, columns);
    const int64_t recentStart = sliceStart(-m_recentCount, columns);
    return (vector.narrow(0, 0, initial).sum() + vector.narrow(0, recentStart, columns - recentStart).sum())
        .item<double>();
}

LazyLayerDecision SimLayerKvPress::decide(const PressInputs& inputs) const {
    LazyLayerDecision decision;
    const int64_t length = inputs.keys.size(2);
    const auto longs = inputs.keys.options().dtype(at::kLong);
    const auto keepAll = [&] {
        return at::arange(length, longs)
            .expand({inputs.keys.size(0), inputs.keys.size(1), length})
            .contiguous();
    };
    if (!measures(length)) {
        decision.keptIndices = keepAll();
        return decision;
    }
    decision.lazyScore = lazyScore(inputs);
    decision.measured = true;
    decision.lazy = decision.lazyScore > m_lazyThreshold;
    if (!decision.lazy) {
        decision.keptIndices = keepAll();
        return decision;
    }
    // kvpress keeps keys[:n_initial] ++ keys[-n_recent + n_last:]: n_recent - n_last recent tokens (all of
    // them when n_recent == n_last, Python's -0).
    const int64_t recentFrom = sliceStart(m_lastCount - m_recentCount, length);
    const at::Tensor kept =
        at::cat({at::arange(std::min(m_initialCount, length), longs), at::arange(recentFrom, length, longs)});
    decision.keptIndices = kept.expand({inputs.keys.size(0), inputs.keys.size(1), kept.size(0)}).contiguous();
    decision.reportedRatio =
        static_cast<double>(length - m_initialCount - m_recentCount + 1) / static_cast<double>(length);
    return decision;
}

} // namespace
} // namespace kvscope::press

namespace {

using namespace kvscope::press;

/// After each layer's prefill, one decision for the whole batch: lazy layers keep their initial and recent
/// tokens, the others every token (recorded too, so that the event log says so).
class SimLayerKvCachePress : public CachePress {
public:
    explicit SimLayerKvCachePress(SimLayerKvPress press) : m_press(std::move(press)) {}
    PressAction onPass(const PressInputs& inputs, const PressPass& pass) override {
        PressAction action;
        if (pass.index != 0) {
            return action;
        }
        const LazyLayerDecision decision = m_press.decide(inputs);
        if (decision.measured) {
            action.kept = decision.keptIndices;
            // kvpress's float32 attention mean: compared within the score tolerance, not exactly.
            action.details["lazy_score"] = at::scalar_tensor(decision.lazyScore, at::kFloat);
        }
        action.details["lazy"] = at::scalar_tensor(decision.lazy ? 1 : 0, at::kLong);
        action.details["press_compression_ratio"] = at::scalar_tensor(decision.reportedRatio, at::kDouble);
        return action;
    }

private:
    SimLayerKvPress m_press;
};

} // namespace

KVSCOPE_PRESS_FACTORY(simlayerkv) {
    PressFactory factory;
    factory.generation = [](const kvscope::config::PressSettings& settings) -> std::unique_ptr<CachePress> {
        const PressOptions options("simlayerkv",
                                   kvscope::config::PressDescriptions::describe("simlayerkv").options,
                                   settings.options);
        return std::make_unique<SimLayerKvCachePress>(
            SimLayerKvPress(options.real("lazy_threshold", 0.0, 1.0), options.integer("n_last", 1),
                            options.integer("n_recent", 0), options.integer("n_initial", 0)));
    };
    return factory;
}
#endif
