// SPDX-License-Identifier: GPL-3.0-or-later
// PrefillDecoding (kvpress's PrefillDecodingPress): one press for the prefill, DecodingPress while decoding.
#include "kvscope/config/PressRegistration.h"

KVSCOPE_PRESS_DESCRIPTION(prefill_decoding) {
    kvscope::config::PressDescription press;
    press.name = "prefill_decoding";
    press.referenceName = "PrefillDecodingPress";
    press.displayName = "PrefillDecoding";
    press.kind = "decoding";
    press.phase = "prefill";
    press.summary =
        "a prefill press at --ratio after the prefill, then DecodingPress (base, target_size, ...) "
        "while decoding";
    press.options = {
        {"prefill", "stage", "knorm", "the press applied after the prefill (its options as prefill.NAME)"},
        kvscope::config::PressOption::base("the scorer DecodingPress compresses with while decoding"),
        {"compression_interval", "int", "512", "decoding passes between compressions"},
        {"target_size", "int", "2048", "tokens per KV head after a decoding compression"},
        {"hidden_states_buffer_size", "int", "256",
         "decoding passes of hidden states kept for the base press"}};
    press.sentence =
        "after the prefill by {prefill}'s scores, then every {compression_interval} steps back to "
        "{target_size} tokens per head by {base_name}'s scores; the {dropped} ranked lowest were dropped";
    press.policy.when = "both";
    return press;
}

#if KVSCOPE_PRESS_ENGINE
#include "kvscope/config/PressDescriptions.h"
#include "kvscope/press/PressCatalog.h"
#include "kvscope/press/PressFactory.h"

namespace {

using namespace kvscope::press;

/// The prefill pass goes to the prefill press, every later pass to DecodingPress.
class PrefillDecodingPress : public CachePress {
public:
    PrefillDecodingPress(std::unique_ptr<CachePress> prefill, DecodingPress decoding)
        : m_prefill(std::move(prefill)), m_decoding(std::move(decoding)) {}
    bool wantsAttentionWeights(int64_t layer, int64_t passIndex) const override {
        return passIndex == 0 && m_prefill->wantsAttentionWeights(layer, passIndex);
    }
    PressAction onPass(const PressInputs& inputs, const PressPass& pass) override {
        if (pass.index == 0) {
            return m_prefill->onPass(inputs, pass);
        }
        PressAction action;
        if (m_decoding.append(inputs, pass.queryLength)) {
            const DecodingStep step = m_decoding.compress(inputs);
            action.details["compressed"] = at::scalar_tensor(1, at::kLong);
            action.details["buffer_len"] = at::scalar_tensor(step.bufferLength, at::kLong);
            action.details["compression_ratio"] = at::scalar_tensor(step.ratio, at::kDouble);
            if (step.ratio > 0.0) {
                action.kept = step.selection.keptIndices;
                action.scores = step.selection.scores;
            }
        }
        return action;
    }

private:
    std::unique_ptr<CachePress> m_prefill;
    DecodingPress m_decoding;
};

} // namespace

KVSCOPE_PRESS_FACTORY(prefill_decoding) {
    PressFactory factory;
    factory.generation = [](const kvscope::config::PressSettings& settings) -> std::unique_ptr<CachePress> {
        using kvscope::config::PressDescriptions;
        const auto [options, base] =
            PressCatalog::wrapped(settings.name, settings.options,
                                  "which only the prefill computes; choose another base (knorm, tova, ...)");
        const std::string prefill = options.text("prefill");
        const kvscope::config::PressDescription* staged = PressDescriptions::find(prefill);
        if (staged == nullptr || staged->phase != "prefill" || staged->policy.effect == "masks" ||
            prefill == settings.name) {
            throw std::invalid_argument("press prefill_decoding option prefill=" + prefill +
                                        ": expected a prefill press that does not mask (" +
                                        PressDescriptions::stagePressNames(settings.name) + ")");
        }
        auto prefillPress = PressCatalog::generation(
            {prefill, settings.ratio, PressDescriptions::stageOptions(settings.options, "prefill")});
        DecodingPress decoding(base, options.integer("compression_interval", 1),
                               options.integer("target_size", 1),
                               options.integer("hidden_states_buffer_size", 0));
        return std::make_unique<PrefillDecodingPress>(std::move(prefillPress), std::move(decoding));
    };
    return factory;
}
#endif
