// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/press/PressCatalog.h"

#include "kvscope/press/ExpectedAttentionPress.h"
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

const PressOption windowOption{"window_size", "int", "64", "recent queries whose attention scores the cache; kept"};
const PressOption kernelOption{"kernel_size", "int", "5", "width of the average pooling along the sequence"};
const PressOption baseOption{"base", "press", "knorm", "the scorer press that ranks the tokens"};

const std::vector<std::pair<std::string, std::string>>& referenceNames() {
    static const std::vector<std::pair<std::string, std::string>> names = {
        {"StreamingLLMPress", "streaming_llm"}, {"KnormPress", "knorm"},
        {"SnapKVPress", "snapkv"},              {"TOVAPress", "tova"},
        {"PyramidKVPress", "pyramidkv"},        {"ObservedAttentionPress", "observed_attention"},
        {"ExpectedAttentionPress", "expected_attention"}, {"RandomPress", "random"},
        {"AdaKVPress", "adakv"},                {"DecodingPress", "decoding"}};
    return names;
}

const PressDescription& describe(const std::string& name) {
    for (const PressDescription& description : PressCatalog::presses()) {
        if (description.name == name) {
            return description;
        }
    }
    throw std::invalid_argument("unknown press `" + name + "` (allowed: " + PressCatalog::allowedNames() + ")");
}

PressOptions optionsOf(const std::string& name, const std::map<std::string, std::string>& given) {
    return PressOptions(name, describe(name).options, given);
}

/// The options meant for the base press: every option that the wrapper does not declare itself.
std::pair<std::map<std::string, std::string>, std::map<std::string, std::string>>
splitOptions(const std::string& wrapper, const std::map<std::string, std::string>& given) {
    std::map<std::string, std::string> own;
    std::map<std::string, std::string> base;
    for (const auto& [key, value] : given) {
        bool declared = false;
        for (const PressOption& option : describe(wrapper).options) {
            declared = declared || option.name == key;
        }
        (declared ? own : base)[key] = value;
    }
    return {own, base};
}

std::shared_ptr<const Press> baseOf(const std::string& wrapper, const std::map<std::string, std::string>& given) {
    const auto [own, base] = splitOptions(wrapper, given);
    const std::string name = optionsOf(wrapper, own).text("base");
    if (describe(name).phase != "prefill" || name == "adakv") {
        throw std::invalid_argument("press " + wrapper + " option base=" + name +
                                    ": expected a scorer press (streaming_llm, knorm, snapkv, tova, pyramidkv, "
                                    "observed_attention, expected_attention, random)");
    }
    return PressCatalog::scorer(name, base);
}

} // namespace

const std::vector<PressDescription>& PressCatalog::presses() {
    static const std::vector<PressDescription> all = {
        {"streaming_llm", "prefill", "keeps the first n_sink slots and the most recent ones",
         {{"n_sink", "int", "4", "attention-sink slots always kept at the start of the cache"}}},
        {"knorm", "prefill", "keeps the keys of smallest L2 norm", {}},
        {"snapkv", "prefill", "attention of the last window_size queries, pooled; the window is kept",
         {windowOption, kernelOption}},
        {"tova", "prefill", "the last query's attention averaged over all heads; the last token is kept", {}},
        {"pyramidkv", "prefill", "SnapKV scores with a per-layer budget shrinking towards the last layer",
         {windowOption, kernelOption, {"beta", "float", "20", "ratio of the first layer's budget to the last's"}}},
        {"observed_attention", "prefill", "the attention each key received during prefill (needs attention weights)",
         {}},
        {"expected_attention", "prefill", "the attention expected from future queries (Gaussian queries, average RoPE)",
         {{"n_future_positions", "int", "512", "future positions the query statistics are rotated to"},
          {"n_sink", "int", "4", "first tokens always kept and left out of the statistics"},
          {"use_covariance", "bool", "true", "add the query covariance term to the expected logits"},
          {"use_vnorm", "bool", "true", "weigh scores by the value norms"},
          {"epsilon", "float", "0", "added to the scores before the value-norm weighting"}}},
        {"random", "prefill", "random scores (torch.rand of a seeded CPU generator)",
         {{"seed", "int", "0", "generator seed"}}},
        {"adakv", "prefill", "per-head budgets over a base scorer: heads mask different numbers of tokens",
         {baseOption, {"alpha_safeguard", "float", "0.2", "share of each head's budget it always keeps"}}},
        {"decoding", "decoding", "compresses the cache back to target_size every compression_interval steps",
         {baseOption,
          {"compression_interval", "int", "512", "forward passes between compressions"},
          {"target_size", "int", "2048", "tokens per KV head after a compression"},
          {"hidden_states_buffer_size", "int", "256", "forward passes of hidden states kept for the base press"}}},
        {"h2o", "decoding", "heavy hitters: attention accumulated over every step plus a recent window",
         {{"budget", "int", "2048", "tokens per KV head kept once the cache grows past it"},
          {"recent_window", "int", "256", "newest slots always kept (part of the budget)"}}},
    };
    return all;
}

std::string PressCatalog::allowedNames() {
    std::string names;
    for (const PressDescription& description : presses()) {
        names += (names.empty() ? "" : ", ") + description.name;
    }
    return names;
}

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
    throw std::invalid_argument("press " + name +
                                " is not a scorer press (scorers: streaming_llm, knorm, snapkv, tova, pyramidkv, "
                                "observed_attention, expected_attention, random)");
}

AdaKvPress PressCatalog::adaKv(const std::map<std::string, std::string>& given) {
    const auto [own, base] = splitOptions("adakv", given);
    return AdaKvPress(baseOf("adakv", given), optionsOf("adakv", own).real("alpha_safeguard", 0.0, 1.0));
}

DecodingPress PressCatalog::decoding(const std::map<std::string, std::string>& given) {
    const auto [own, base] = splitOptions("decoding", given);
    const PressOptions options = optionsOf("decoding", own);
    return DecodingPress(baseOf("decoding", given), options.integer("compression_interval", 1),
                         options.integer("target_size", 1), options.integer("hidden_states_buffer_size", 0));
}

H2oPress PressCatalog::h2o(const std::map<std::string, std::string>& given) {
    const PressOptions options = optionsOf("h2o", given);
    return H2oPress(options.integer("budget", 1), options.integer("recent_window", 0));
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
