// SPDX-License-Identifier: GPL-3.0-or-later
// CompressionRatioDecoding (kvpress's CompressionRatioDecodingPress): DecodingPress whose target follows the
// tokens seen, a fixed share of them.
#include "kvscope/config/PressRegistration.h"

KVSCOPE_PRESS_DESCRIPTION(compression_ratio_decoding) {
    kvscope::config::PressDescription press;
    press.name = "compression_ratio_decoding";
    press.referenceName = "CompressionRatioDecodingPress";
    press.displayName = "CompressionRatioDecoding";
    press.kind = "decoding";
    press.phase = "decoding";
    press.summary = "while decoding, every compression_interval steps the cache goes back to (1 - "
                    "target_compression_ratio) of the tokens seen so far";
    press.options = {kvscope::config::PressOption::base(),
                     {"target_compression_ratio", "float", "0.5", "share of the tokens seen that is removed"},
                     {"compression_interval", "int", "512", "decoding passes between compressions"},
                     {"hidden_states_buffer_size", "int", "256",
                      "decoding passes of hidden states kept for the base press"}};
    press.sentence =
        "every {compression_interval} steps it keeps 1 - {target_compression_ratio} of the tokens "
        "seen so far, by {base_name}'s scores: {base}";
    press.policy.when = "decoding";
    return press;
}

#if KVSCOPE_PRESS_ENGINE
#include "kvscope/press/DecodingPress.h"
#include "kvscope/press/PressCatalog.h"
#include "kvscope/press/PressFactory.h"

#include <ATen/ATen.h>
#include <map>

namespace {

using namespace kvscope::press;

/// DecodingPress's buffering per layer, with the target max(1, int(seen * (1 - ratio))) where `seen` is the
/// largest position of the pass + 1 (kvpress reads the logical position_ids), in the trigger and the search.
class CompressionRatioDecodingPress : public CachePress {
public:
    CompressionRatioDecodingPress(std::shared_ptr<const Press> base, double targetRatio, int64_t interval,
                                  int64_t bufferSize)
        : m_base(std::move(base)), m_targetRatio(targetRatio), m_interval(interval),
          m_bufferSize(bufferSize) {}
    PressAction onPass(const PressInputs& inputs, const PressPass& pass) override {
        PressAction action;
        if (pass.index == 0) {
            return action; // no prefill compression
        }
        Layer& layer = m_layers[inputs.layerIndex];
        layer.buffer.push_back(
            inputs.hiddenStates.defined()
                ? inputs.hiddenStates
                : at::empty({inputs.keys.size(0), pass.queryLength, 0}, inputs.keys.options()));
        layer.count += 1;
        const int64_t seen =
            pass.positions.narrow(-1, pass.positions.size(-1) - pass.queryLength, pass.queryLength)
                .max()
                .item<int64_t>() +
            1;
        const int64_t target =
            std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(seen) * (1.0 - m_targetRatio)));
        action.details["target_size"] = at::scalar_tensor(target, at::kLong);
        if (layer.count >= m_interval || pass.queryLength >= target) {
            PressInputs buffered = inputs;
            buffered.hiddenStates = at::cat(layer.buffer, 1);
            const double ratio = DecodingPress::targetRatio(inputs.keys.size(2), target);
            action.details["compressed"] = at::scalar_tensor(1, at::kLong);
            action.details["buffer_len"] = at::scalar_tensor(buffered.hiddenStates.size(1), at::kLong);
            action.details["compression_ratio"] = at::scalar_tensor(ratio, at::kDouble);
            if (ratio > 0.0) {
                const PressSelection selection = m_base->select(buffered, ratio);
                action.kept = selection.keptIndices;
                action.scores = selection.scores;
            }
            layer.count = 0;
            layer.buffer.clear();
        }
        if (m_bufferSize == 0) {
            layer.buffer.clear();
        } else if (static_cast<int64_t>(layer.buffer.size()) > m_bufferSize) {
            layer.buffer.erase(layer.buffer.begin(), layer.buffer.end() - m_bufferSize);
        }
        return action;
    }

private:
    struct Layer {
        std::vector<at::Tensor> buffer;
        int64_t count = 0;
    };
    std::shared_ptr<const Press> m_base;
    double m_targetRatio;
    int64_t m_interval;
    int64_t m_bufferSize;
    std::map<int64_t, Layer> m_layers;
};

} // namespace

KVSCOPE_PRESS_FACTORY(compression_ratio_decoding) {
    PressFactory factory;
    factory.generation = [](const kvscope::config::PressSettings& settings) -> std::unique_ptr<CachePress> {
        const auto [options, base] =
            PressCatalog::wrapped(settings.name, settings.options,
                                  "which only the prefill computes; choose another base (knorm, tova, ...)");
        return std::make_unique<CompressionRatioDecodingPress>(
            base, options.real("target_compression_ratio", 0.0, 0.999999),
            options.integer("compression_interval", 1), options.integer("hidden_states_buffer_size", 0));
    };
    return factory;
}
#endif
