// SPDX-License-Identifier: GPL-3.0-or-later
// H2O (heavy hitters, beyond kvpress): accumulated attention plus a recent window, every pass.
#include "kvscope/config/PressDescriptions.h"
#include "kvscope/config/PressRegistration.h"

KVSCOPE_PRESS_DESCRIPTION(h2o) {
    kvscope::config::PressDescription press;
    press.name = "h2o";
    press.displayName = "H2O";
    press.kind = "decoding";
    press.phase = "decoding";
    press.summary = "heavy hitters: attention accumulated over every step plus a recent window";
    press.options = {
        {"budget", "int", "2048", "tokens per KV head kept once the cache grows past it"},
        {"recent_window", "int", "budget / 8",
         "newest slots always kept (part of the budget; 256 of the default budget, at least 1)"}};
    press.sentence =
        "within a budget of {budget} it keeps the {recent_window} newest and the heavy hitters of "
        "accumulated attention; the {dropped} others were dropped";
    press.policy.attentions = true;
    press.policy.when = "both";
    // The recent window's default follows the budget, so that `budget=16` alone works.
    press.derivedDefault = [](const std::string& option,
                              const std::map<std::string, std::string>& given) -> std::optional<std::string> {
        if (option != "recent_window") {
            return std::nullopt;
        }
        const auto budget = given.find("budget");
        try {
            return std::to_string(kvscope::config::PressDescriptions::h2oRecentWindow(
                budget != given.end() ? std::stoll(budget->second) : 2048));
        } catch (const std::exception&) {
            return std::nullopt; // an unreadable budget is refused where the press is built
        }
    };
    return press;
}

#if KVSCOPE_PRESS_ENGINE
#include "kvscope/config/PressDescriptions.h"
#include "kvscope/press/H2oPress.h"
#include "kvscope/press/PressCatalog.h"
#include "kvscope/press/PressFactory.h"
#include "kvscope/press/TopKSelection.h"

#include <ATen/ATen.h>
#include <stdexcept>

namespace kvscope::press {

H2oPress::H2oPress(int64_t budget, int64_t recentWindow) : m_budget(budget), m_recentWindow(recentWindow) {
    if (budget < 1) {
        throw std::invalid_argument("H2O's budget must be at least 1, got " + std::to_string(budget));
    }
    if (recentWindow < 0 || recentWindow > budget) {
        throw std::invalid_argument(
            "H2O's recent_window (" + std::to_string(recentWindow) + ") is part of its budget (" +
            std::to_string(budget) + ") and must be at most that: give --press-option recent_window=" +
            std::to_string(defaultRecentWindow(budget)) + " or leave it out (budget / 8)");
    }
}

int64_t H2oPress::defaultRecentWindow(int64_t budget) {
    return config::PressDescriptions::h2oRecentWindow(budget);
}

at::Tensor H2oPress::step(int64_t layerIndex, const at::Tensor& attentions, int64_t numKeyValueHeads) {
    return stepReceived(layerIndex, attentions.to(at::kFloat).sum(2), numKeyValueHeads);
}

at::Tensor H2oPress::stepReceived(int64_t layerIndex, const at::Tensor& receivedPerHead, int64_t numKeyValueHeads) {
    const int64_t batch = receivedPerHead.size(0);
    const int64_t length = receivedPerHead.size(-1);
    // Attention received this pass (summed over the queries), averaged over each KV head's query heads.
    const at::Tensor received =
        receivedPerHead.to(at::kFloat).reshape({batch, numKeyValueHeads, -1, length}).mean(2);
    at::Tensor& scores = m_scores[layerIndex];
    if (!scores.defined()) {
        scores = at::zeros({batch, numKeyValueHeads, 0}, received.options());
    }
    if (scores.size(2) > length) {
        throw std::invalid_argument("h2o: the layer holds " + std::to_string(scores.size(2)) +
                                    " scored slots but the attention covers only " + std::to_string(length));
    }
    scores = at::cat({scores, at::zeros({batch, numKeyValueHeads, length - scores.size(2)}, received.options())}, 2) +
             received;
    if (length <= m_budget) {
        return {};
    }
    const int64_t older = length - m_recentWindow;
    const int64_t heavyCount = m_budget - m_recentWindow;
    const auto longs = scores.options().dtype(at::kLong);
    at::Tensor kept;
    if (older - heavyCount == 1) {
        // One token over the budget, as at every decoding step: the one older slot the canonical top-k leaves
        // out goes (the lowest score; of equal lowest scores the latest), found without sorting the layer.
        const at::Tensor dropped =
            (older - 1) - scores.narrow(2, 0, older).flip({2}).argmin(2, /*keepdim=*/true);
        const at::Tensor slots = at::arange(length - 1, longs).expand({batch, numKeyValueHeads, length - 1});
        kept = slots + slots.ge(dropped).to(at::kLong);
    } else {
        const at::Tensor heavy = TopKSelection::largest(scores.narrow(2, 0, older), heavyCount);
        const at::Tensor recent =
            at::arange(older, length, longs).expand({batch, numKeyValueHeads, m_recentWindow});
        kept = std::get<0>(at::sort(at::cat({heavy, recent}, 2), -1));
    }
    scores = scores.gather(2, kept);
    return kept;
}

at::Tensor H2oPress::accumulated(int64_t layerIndex) const {
    const auto found = m_scores.find(layerIndex);
    return found == m_scores.end() ? at::Tensor() : found->second;
}

} // namespace kvscope::press

namespace {

using namespace kvscope::press;

/// Every pass adds the attention each slot received; a layer over budget keeps its heavy hitters.
class H2oCachePress : public CachePress {
public:
    explicit H2oCachePress(H2oPress press) : m_press(std::move(press)) {}
    bool wantsAttentionWeights(int64_t, int64_t) const override { return true; }
    PressAction onPass(const PressInputs& inputs, const PressPass&) override {
        PressAction action;
        // The accumulated attention it ranked by is not a per-slot score of this cache: none is logged.
        // What each key received, summed over the queries: the model hands it over chunk by chunk.
        action.kept = m_press.stepReceived(inputs.layerIndex, inputs.receivedAttention().to(at::kFloat),
                                           inputs.numKeyValueHeads);
        return action;
    }

private:
    H2oPress m_press;
};

} // namespace

KVSCOPE_PRESS_FACTORY(h2o) {
    PressFactory factory;
    factory.generation = [](const kvscope::config::PressSettings& settings) -> std::unique_ptr<CachePress> {
        return std::make_unique<H2oCachePress>(PressCatalog::h2o(settings.options));
    };
    return factory;
}
#endif
