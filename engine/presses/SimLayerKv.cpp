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
#include "kvscope/press/SimLayerKvPress.h"

#include <ATen/ATen.h>

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
