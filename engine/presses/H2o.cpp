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
#include "kvscope/press/PressCatalog.h"
#include "kvscope/press/PressFactory.h"

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
