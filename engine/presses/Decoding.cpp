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
#include "kvscope/press/DecodingPress.h"
#include "kvscope/press/PressCatalog.h"
#include "kvscope/press/PressFactory.h"

#include <ATen/ATen.h>
#include <stdexcept>

namespace kvscope::press {

DecodingPress::DecodingPress(std::shared_ptr<const Press> base, int64_t compressionInterval, int64_t targetSize,
                             int64_t bufferSize)
    : m_base(std::move(base)), m_compressionInterval(compressionInterval), m_targetSize(targetSize),
      m_bufferSize(bufferSize) {
    if (compressionInterval < 1 || targetSize < 1 || bufferSize < 0) {
        throw std::invalid_argument("decoding press: compression_interval and target_size must be >= 1, "
                                    "hidden_states_buffer_size >= 0");
    }
}

double DecodingPress::targetRatio(int64_t length, int64_t target) {
    if (length <= target) {
        return 0.0;
    }
    const double tokens = static_cast<double>(length);
    double ratio = 1.0 - static_cast<double>(target) / tokens;
    double low = 0.0;
    double high = 1.0;
    for (int attempt = 0; attempt < 20; ++attempt) {
        const auto kept = static_cast<int64_t>(tokens * (1.0 - ratio));
        if (kept == target) {
            break;
        }
        if (kept > target) {
            low = ratio;
            ratio = (ratio + high) / 2.0;
        } else {
            high = ratio;
            ratio = (low + ratio) / 2.0;
        }
    }
    return ratio;
}

bool DecodingPress::append(const PressInputs& inputs, int64_t queryLength) {
    LayerState& state = m_layers[inputs.layerIndex];
    // Buffered per forward pass, not per token; a base press that reads no hidden states still counts rows.
    state.buffer.push_back(inputs.hiddenStates.defined()
                               ? inputs.hiddenStates
                               : at::empty({inputs.keys.size(0), queryLength, 0}, inputs.keys.options()));
    state.count += 1;
    if (state.count >= m_compressionInterval || queryLength >= m_targetSize) {
        return true;
    }
    if (m_bufferSize == 0) {
        state.buffer.clear();
    } else if (static_cast<int64_t>(state.buffer.size()) > m_bufferSize) {
        state.buffer.erase(state.buffer.begin(), state.buffer.end() - m_bufferSize);
    }
    return false;
}

DecodingStep DecodingPress::compress(const PressInputs& inputs) {
    LayerState& state = m_layers[inputs.layerIndex];
    DecodingStep result;
    result.compressed = true;
    PressInputs buffered = inputs;
    buffered.hiddenStates = at::cat(state.buffer, 1);
    result.bufferLength = buffered.hiddenStates.size(1);
    result.ratio = targetRatio(inputs.keys.size(2), m_targetSize);
    result.selection = m_base->select(buffered, result.ratio);
    state.count = 0;
    state.buffer.clear();
    return result;
}

} // namespace kvscope::press

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
