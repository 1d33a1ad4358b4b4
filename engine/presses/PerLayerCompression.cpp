// SPDX-License-Identifier: GPL-3.0-or-later
// PerLayerCompression (kvpress's PerLayerCompressionPress): a base scorer at a ratio of its own per layer.
#include "kvscope/config/PressRegistration.h"

KVSCOPE_PRESS_DESCRIPTION(per_layer_compression) {
    kvscope::config::PressDescription press;
    press.name = "per_layer_compression";
    press.referenceName = "PerLayerCompressionPress";
    press.displayName = "PerLayerCompression";
    press.kind = "wrapper";
    press.phase = "prefill";
    press.summary = "a base scorer at each layer's own ratio (compression_ratios, one per layer)";
    press.options = {kvscope::config::PressOption::base(),
                     {"compression_ratios", "text", "",
                      "comma-separated ratios, one per layer (empty: --ratio for every layer)"}};
    press.sentence = "at this layer's own ratio, by {base_name}'s scores: {base}";
    return press;
}

#if KVSCOPE_PRESS_ENGINE
#include "kvscope/press/PressCatalog.h"
#include "kvscope/press/PressFactory.h"

#include <sstream>

namespace {

using namespace kvscope::press;

/// After each layer's prefill: the base press at compression_ratios[layer] (kvpress swaps the base's ratio).
class PerLayerCompressionPress : public CachePress {
public:
    PerLayerCompressionPress(std::shared_ptr<const Press> base, std::vector<double> ratios)
        : m_base(std::move(base)), m_ratios(std::move(ratios)) {}
    bool wantsAttentionWeights(int64_t, int64_t passIndex) const override {
        return passIndex == 0 && m_base->reads().attentions;
    }
    PressAction onPass(const PressInputs& inputs, const PressPass& pass) override {
        PressAction action;
        if (pass.index != 0) {
            return action;
        }
        double ratio = pass.ratio;
        if (!m_ratios.empty()) {
            if (inputs.layerIndex >= static_cast<int64_t>(m_ratios.size())) {
                throw std::invalid_argument("per_layer_compression: compression_ratios gives " +
                                            std::to_string(m_ratios.size()) + " ratios but the model has " +
                                            std::to_string(inputs.numLayers) +
                                            " layers: give one ratio per layer, comma-separated");
            }
            ratio = m_ratios[static_cast<size_t>(inputs.layerIndex)];
        }
        if (ratio > 0.0) {
            const PressSelection selection = m_base->select(inputs, ratio);
            action.kept = selection.keptIndices;
            action.scores = selection.scores;
        }
        return action;
    }

private:
    std::shared_ptr<const Press> m_base;
    std::vector<double> m_ratios;
};

std::vector<double> ratiosOf(const std::string& text) {
    std::vector<double> ratios;
    std::stringstream items(text);
    for (std::string item; std::getline(items, item, ',');) {
        size_t used = 0;
        double ratio = -1.0;
        try {
            ratio = std::stod(item, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used == 0 || !(ratio >= 0.0 && ratio < 1.0)) {
            throw std::invalid_argument("per_layer_compression option compression_ratios: `" + item +
                                        "` is not a ratio in [0, 1); give one per layer, e.g. 0.5,0.25");
        }
        ratios.push_back(ratio);
    }
    return ratios;
}

} // namespace

KVSCOPE_PRESS_FACTORY(per_layer_compression) {
    PressFactory factory;
    factory.generation = [](const kvscope::config::PressSettings& settings) -> std::unique_ptr<CachePress> {
        const auto [options, base] = PressCatalog::wrapped(settings.name, settings.options);
        return std::make_unique<PerLayerCompressionPress>(base, ratiosOf(options.text("compression_ratios")));
    };
    return factory;
}
#endif
