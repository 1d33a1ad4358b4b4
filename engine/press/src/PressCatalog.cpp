// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/press/PressCatalog.h"

#include "kvscope/config/PressDescriptions.h"

#include "kvscope/press/CapPress.h"
#include "kvscope/press/CompactorPress.h"
#include "kvscope/press/CurPress.h"
#include "kvscope/press/ExpectedAttentionPress.h"
#include "kvscope/press/KeyDiffPress.h"
#include "kvscope/press/LagKvPress.h"
#include "kvscope/press/LeverageScorePress.h"
#include "kvscope/press/NonCausalAttentionPress.h"
#include "kvscope/press/KnormPress.h"
#include "kvscope/press/ObservedAttentionPress.h"
#include "kvscope/press/PressOptions.h"
#include "kvscope/press/PyramidKvPress.h"
#include "kvscope/press/RandomPress.h"
#include "kvscope/press/SnapKvPress.h"
#include "kvscope/press/StreamingLlmPress.h"
#include "kvscope/press/TovaPress.h"

#include <limits>
#include <stdexcept>
#include <utility>

namespace kvscope::press {
namespace {

const std::vector<std::pair<std::string, std::string>>& referenceNames() {
    static const std::vector<std::pair<std::string, std::string>> names = {
        {"StreamingLLMPress", "streaming_llm"}, {"KnormPress", "knorm"},
        {"SnapKVPress", "snapkv"},              {"TOVAPress", "tova"},
        {"PyramidKVPress", "pyramidkv"},        {"ObservedAttentionPress", "observed_attention"},
        {"ExpectedAttentionPress", "expected_attention"}, {"RandomPress", "random"},
        {"AdaKVPress", "adakv"},                {"DecodingPress", "decoding"},
        {"KeyDiffPress", "keydiff"},            {"LagKVPress", "lagkv"},
        {"NonCausalAttnPress", "non_causal_attention"}, {"LeverageScorePress", "leverage"},
        {"CURPress", "cur"},                    {"CompactorPress", "compactor"},
        {"CapPress", "cap"},                    {"ThinKPress", "think"},
        {"SimLayerKVPress", "simlayerkv"}};
    return names;
}

PressOptions optionsOf(const std::string& name, const std::map<std::string, std::string>& given) {
    return PressOptions(name, config::PressDescriptions::describe(name).options, given);
}

std::shared_ptr<const Press> baseOf(const std::string& wrapper, const std::map<std::string, std::string>& given) {
    const auto [own, base] = config::PressDescriptions::splitOptions(wrapper, given);
    const std::string name = optionsOf(wrapper, own).text("base");
    if (!config::PressDescriptions::isScorer(name)) {
        throw std::invalid_argument("press " + wrapper + " option base=" + name +
                                    ": expected a scorer press (" + config::PressDescriptions::scorerNames() + ")");
    }
    return PressCatalog::scorer(name, base);
}

} // namespace

const std::vector<PressDescription>& PressCatalog::presses() { return config::PressDescriptions::all(); }

std::string PressCatalog::allowedNames() { return config::PressDescriptions::allowedNames(); }

std::shared_ptr<const Press> PressCatalog::scorer(const std::string& name,
                                                  const std::map<std::string, std::string>& given) {
    const PressOptions options = optionsOf(name, given);
    constexpr double unbounded = std::numeric_limits<double>::max();
    if (name == "streaming_llm") {
        return std::make_shared<StreamingLlmPress>(options.integer("n_sink", 0));
    }
    if (name == "knorm") {
        return std::make_shared<KnormPress>();
    }
    if (name == "snapkv") {
        return std::make_shared<SnapKvPress>(options.integer("window_size", 1), options.integer("kernel_size", 1));
    }
    if (name == "tova") {
        return std::make_shared<TovaPress>();
    }
    if (name == "pyramidkv") {
        return std::make_shared<PyramidKvPress>(options.integer("window_size", 1), options.integer("kernel_size", 1),
                                                options.real("beta", 1e-9, unbounded));
    }
    if (name == "observed_attention") {
        return std::make_shared<ObservedAttentionPress>();
    }
    if (name == "expected_attention") {
        return std::make_shared<ExpectedAttentionPress>(options.integer("n_future_positions", 1),
                                                        options.integer("n_sink", 0), options.flag("use_covariance"),
                                                        options.flag("use_vnorm"), options.real("epsilon", 0.0, unbounded));
    }
    if (name == "random") {
        return std::make_shared<RandomPress>(static_cast<uint64_t>(options.integer("seed", 0)));
    }
    if (name == "keydiff") {
        return std::make_shared<KeyDiffPress>();
    }
    if (name == "lagkv") {
        return std::make_shared<LagKvPress>(options.integer("n_sink", 0), options.integer("lag_size", 1),
                                            options.flag("cross_scoring"));
    }
    if (name == "non_causal_attention") {
        return std::make_shared<NonCausalAttentionPress>(options.integer("chunk_size", 1));
    }
    if (name == "leverage") {
        return std::make_shared<LeverageScorePress>(options.integer("sketch_dimension", 1),
                                                    static_cast<uint64_t>(options.integer("seed", 0)));
    }
    if (name == "cur") {
        return std::make_shared<CurPress>(options.integer("num_sinks", 0), options.text("leverage_type"),
                                          options.flag("use_random_leverage"), options.flag("use_local_approximation"),
                                          options.integer("local_window_size", 1),
                                          static_cast<uint64_t>(options.integer("seed", 0)));
    }
    if (name == "compactor") {
        const std::string blending = options.text("blending");
        return std::make_shared<CompactorPress>(
            options.integer("sink_size_start", 0), options.integer("sink_size_end", 0), options.integer("chunk_size", 1),
            options.integer("sketch_dimension", 1),
            blending == "ratio" || blending == "null" ? std::nullopt : std::optional<double>(options.real("blending", 0.0, unbounded)),
            static_cast<uint64_t>(options.integer("seed", 0)));
    }
    if (name == "cap") {
        return std::make_shared<CapPress>(options.real("tau", 0.0, unbounded), options.integer("n_future_positions", 1),
                                          options.integer("n_sink", 0), options.real("epsilon", 0.0, unbounded));
    }
    throw std::invalid_argument("press " + name +
                                " is not a scorer press (scorers: streaming_llm, knorm, snapkv, tova, pyramidkv, "
                                "observed_attention, expected_attention, random)");
}

AdaKvPress PressCatalog::adaKv(const std::map<std::string, std::string>& given) {
    const auto [own, base] = config::PressDescriptions::splitOptions("adakv", given);
    return AdaKvPress(baseOf("adakv", given), optionsOf("adakv", own).real("alpha_safeguard", 0.0, 1.0));
}

DecodingPress PressCatalog::decoding(const std::map<std::string, std::string>& given) {
    const auto [own, base] = config::PressDescriptions::splitOptions("decoding", given);
    const PressOptions options = optionsOf("decoding", own);
    return DecodingPress(baseOf("decoding", given), options.integer("compression_interval", 1),
                         options.integer("target_size", 1), options.integer("hidden_states_buffer_size", 0));
}

H2oPress PressCatalog::h2o(const std::map<std::string, std::string>& given) {
    const PressOptions options = optionsOf("h2o", given);
    const int64_t budget = options.integer("budget", 1);
    // The recent window's default follows the budget, so that `budget=16` alone works.
    return H2oPress(budget, given.count("recent_window") != 0 ? options.integer("recent_window", 0)
                                                              : H2oPress::defaultRecentWindow(budget));
}

std::optional<std::string> PressCatalog::fromReferenceName(const std::string& referenceName) {
    for (const auto& [reference, name] : referenceNames()) {
        if (reference == referenceName) {
            return name;
        }
    }
    return std::nullopt;
}

} // namespace kvscope::press
