// SPDX-License-Identifier: GPL-3.0-or-later
// DecodingPress (kvpress's DecodingPress): a base scorer applied every few decoding steps.
#include "kvscope/config/PressRegistration.h"

KVSCOPE_PRESS_DESCRIPTION(decoding) {
    kvscope::config::PressDescription press;
    press.name = "decoding";
    press.referenceName = "DecodingPress";
    press.displayName = "DecodingPress";
    press.kind = "decoding";
    press.phase = "decoding";
    press.summary = "compresses the cache back to target_size every compression_interval steps";
    press.options = {kvscope::config::PressOption::base(),
                     {"compression_interval", "int", "512", "forward passes between compressions"},
                     {"target_size", "int", "2048", "tokens per KV head after a compression"},
                     {"hidden_states_buffer_size", "int", "256",
                      "forward passes of hidden states kept for the base press"}};
    press.sentence =
        "every {compression_interval} steps it brings the cache back to {target_size} tokens per head by "
        "{base_name}'s scores: {base}";
    press.policy.when = "decoding";
    return press;
}

#if KVSCOPE_PRESS_ENGINE
#include "kvscope/press/PressCatalog.h"
#include "kvscope/press/PressFactory.h"

namespace {

using namespace kvscope::press;

/// Every decoding pass is buffered; when one is due the layer is compressed back to the target.
class DecodingCachePress : public CachePress {
public:
    explicit DecodingCachePress(DecodingPress press) : m_press(std::move(press)) {}
    PressAction onPass(const PressInputs& inputs, const PressPass& pass) override {
        PressAction action;
        if (pass.index > 0 && m_press.append(inputs, pass.queryLength)) {
            const DecodingStep step = m_press.compress(inputs);
            if (step.ratio > 0.0) {
                action.kept = step.selection.keptIndices;
                action.scores = step.selection.scores;
            }
        }
        return action;
    }

private:
    DecodingPress m_press;
};

} // namespace

KVSCOPE_PRESS_FACTORY(decoding) {
    PressFactory factory;
    factory.generation = [](const kvscope::config::PressSettings& settings) -> std::unique_ptr<CachePress> {
        return std::make_unique<DecodingCachePress>(
            PressCatalog::decoding(settings.options, "which only the prefill computes; choose another base "
                                                     "(knorm, snapkv, tova, streaming_llm, ...)"));
    };
    return factory;
}
#endif
