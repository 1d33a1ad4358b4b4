// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/config/PressDescriptions.h"

#include "kvscope/config/PressOptions.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

namespace kvscope::config {
namespace {

const PressOption windowOption{"window_size", "int", "64",
                               "recent queries whose attention scores the cache; kept",
                               /*belowPrompt=*/true};
const PressOption sinkOption{"n_sink", "int", "4",
                             "attention-sink slots always kept at the start of the cache",
                             /*belowPrompt=*/true};
const PressOption kernelOption{"kernel_size", "int", "5", "width of the average pooling along the sequence"};
const PressOption baseOption{"base", "press", "knorm", "the scorer press that ranks the tokens"};

} // namespace

const std::vector<PressDescription>& PressDescriptions::all() {
    static const std::vector<PressDescription> all = {
        {"streaming_llm", "prefill", "keeps the first n_sink slots and the most recent ones", {sinkOption}},
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
          {"n_sink", "int", "4", "first tokens always kept and left out of the statistics",
           /*belowPrompt=*/true},
          {"use_covariance", "bool", "true", "add the query covariance term to the expected logits"},
          {"use_vnorm", "bool", "true", "weigh scores by the value norms"},
          {"epsilon", "float", "0", "added to the scores before the value-norm weighting"}}},
        {"random", "prefill", "random scores (torch.rand of a seeded CPU generator)",
         {{"seed", "int", "0", "generator seed"}}},
        {"keydiff", "prefill", "keeps the keys least like the head's average key direction (-cosine)", {}},
        {"lagkv", "prefill", "scores each lag_size partition against the next one's min-max range; sinks and the last partition kept",
         {{"n_sink", "int", "4", "first tokens always kept", /*belowPrompt=*/true},
          {"lag_size", "int", "128", "tokens per partition; the next partition is the reference"},
          {"cross_scoring", "bool", "false", "rank by the raw lag scores instead of the rank inside each partition"}}},
        {"non_causal_attention", "prefill", "attention each token receives from its chunk's queries, unmasked, times its value norm",
         {{"chunk_size", "int", "256", "tokens per chunk of non-causal attention"}}},
        {"leverage", "prefill", "statistical leverage of each pre-RoPE key under a random sketch (z-normalised)",
         {{"sketch_dimension", "int", "48", "columns of the random Gaussian sketch"},
          {"seed", "int", "0", "seed of the sketch (kvpress draws it from torch's global RNG)"}}},
        {"cur", "prefill", "approximate leverage from squared key/value norms; the first num_sinks kept",
         {{"num_sinks", "int", "4", "first tokens always kept"},
          {"leverage_type", "text", "kv_product", "key, value, kv_avg or kv_product"},
          {"use_random_leverage", "bool", "false", "project keys and values on 20 random directions first"},
          {"use_local_approximation", "bool", "true", "normalise within windows of local_window_size tokens"},
          {"local_window_size", "int", "16", "tokens per local window"},
          {"seed", "int", "0", "seed of the random projection (kvpress draws it from torch's global RNG)"}}},
        {"compactor", "prefill", "blend of leverage and non-causal attention scores; sinks at both ends kept",
         {{"sink_size_start", "int", "8", "first tokens always kept"},
          {"sink_size_end", "int", "4", "last tokens always kept"},
          {"chunk_size", "int", "256", "tokens per chunk of non-causal attention"},
          {"sketch_dimension", "int", "48", "columns of the random Gaussian sketch"},
          {"blending", "float", "ratio", "weight of the leverage scores (default: the compression ratio)"},
          {"seed", "int", "0", "seed of the sketch (kvpress draws it from torch's global RNG)"}}},
        {"cap", "prefill", "ridge leverage of each value among values weighted by key alignment with future queries",
         {{"tau", "float", "5", "sharpness of the key-alignment weights"},
          {"n_future_positions", "int", "512", "future positions the average query is rotated to"},
          {"n_sink", "int", "4", "first tokens always kept", /*belowPrompt=*/true},
          {"epsilon", "float", "0.000001", "added to each weight in the capacity matrix"}}},
        {"think", "prefill", "zeroes the least used key channels per head (--ratio: the share of channels); keeps every token",
         {{"window_size", "int", "32", "recent queries whose norms score the channels", /*belowPrompt=*/true}}},
        {"simlayerkv", "prefill", "a lazy layer (attention on initial and recent tokens) keeps only those; others keep all",
         {{"lazy_threshold", "float", "1", "lazy when the initial+recent attention exceeds it; 1 disables"},
          {"n_last", "int", "1", "last queries whose attention decides"},
          {"n_recent", "int", "1024", "recent tokens a lazy layer keeps (n_recent - n_last of them)"},
          {"n_initial", "int", "4", "initial tokens a lazy layer keeps"}}},
        {"adakv", "prefill", "per-head budgets over a base scorer: heads mask different numbers of tokens",
         {baseOption, {"alpha_safeguard", "float", "0.2", "share of each head's budget it always keeps"}}},
        {"decoding", "decoding", "compresses the cache back to target_size every compression_interval steps",
         {baseOption,
          {"compression_interval", "int", "512", "forward passes between compressions"},
          {"target_size", "int", "2048", "tokens per KV head after a compression"},
          {"hidden_states_buffer_size", "int", "256", "forward passes of hidden states kept for the base press"}}},
        {"h2o", "decoding", "heavy hitters: attention accumulated over every step plus a recent window",
         {{"budget", "int", "2048", "tokens per KV head kept once the cache grows past it"},
          {"recent_window", "int", "budget / 8",
           "newest slots always kept (part of the budget; 256 of the default "
           "budget, at least 1)"}}},
    };
    return all;
}

const PressDescription* PressDescriptions::find(const std::string& name) {
    const auto& presses = all();
    const auto found = std::find_if(presses.begin(), presses.end(),
                                    [&](const PressDescription& description) { return description.name == name; });
    return found != presses.end() ? &*found : nullptr;
}

const PressDescription& PressDescriptions::describe(const std::string& name) {
    if (const PressDescription* description = find(name)) {
        return *description;
    }
    throw std::invalid_argument("unknown press `" + name + "` (allowed: " + allowedNames() + ")");
}

std::string PressDescriptions::allowedNames() {
    std::string names;
    for (const PressDescription& description : all()) {
        names += (names.empty() ? "" : ", ") + description.name;
    }
    return names;
}

bool PressDescriptions::isScorer(const std::string& name) {
    const PressDescription* description = find(name);
    return description != nullptr && description->phase == "prefill" && name != "adakv" && name != "think" &&
           name != "simlayerkv";
}

std::string PressDescriptions::scorerNames() {
    std::string names;
    for (const PressDescription& description : all()) {
        if (isScorer(description.name)) {
            names += (names.empty() ? "" : ", ") + description.name;
        }
    }
    return names;
}

std::pair<std::map<std::string, std::string>, std::map<std::string, std::string>>
PressDescriptions::splitOptions(const std::string& wrapper, const std::map<std::string, std::string>& given) {
    std::map<std::string, std::string> own;
    std::map<std::string, std::string> base;
    const std::vector<PressOption>& declared = describe(wrapper).options;
    for (const auto& [key, value] : given) {
        const bool isOwn = std::any_of(declared.begin(), declared.end(),
                                       [&](const PressOption& option) { return option.name == key; });
        (isOwn ? own : base)[key] = value;
    }
    return {own, base};
}

void PressDescriptions::checkOptions(const std::string& name, const std::map<std::string, std::string>& given) {
    const PressDescription& description = describe(name);
    const bool wrapper = std::any_of(description.options.begin(), description.options.end(),
                                     [](const PressOption& option) { return option.type == "press"; });
    const auto [own, base] = wrapper ? splitOptions(name, given) : std::pair{given, std::map<std::string, std::string>{}};
    const PressOptions options(name, description.options, own);
    for (const auto& [key, value] : own) {
        const PressOption& option = *std::find_if(description.options.begin(), description.options.end(),
                                                  [&](const PressOption& declared) { return declared.name == key; });
        // Types only: every option of the catalogue is at least 0; finer ranges are the press's own check.
        if (option.type == "int") {
            (void)options.integer(key, 0);
        } else if (option.type == "float") {
            (void)options.real(key, 0.0, std::numeric_limits<double>::infinity());
        } else if (option.type == "bool") {
            (void)options.flag(key);
        } else if (option.type == "press" && !isScorer(value)) {
            throw std::invalid_argument("press " + name + " option " + key + "=" + value +
                                        ": expected a scorer press (" + scorerNames() + ")");
        }
    }
    if (wrapper) {
        checkOptions(options.text("base"), base);
    }
}

std::int64_t PressDescriptions::h2oRecentWindow(std::int64_t budget) {
    return std::max<std::int64_t>(1, budget / 8);
}

std::int64_t PressDescriptions::fitBelowPrompt(std::int64_t tokens) {
    std::int64_t value = 0;
    for (std::int64_t power = 1; power <= tokens / 2; power *= 2) {
        value = power;
    }
    return value;
}

std::vector<std::string> PressDescriptions::fitToPrompt(PressSettings& press, std::int64_t tokens) {
    std::vector<std::string> notices;
    const PressDescription* description = find(press.name);
    if (description == nullptr || description->phase != "prefill") {
        return notices; // decoding presses act on a cache longer than the prompt
    }
    std::vector<const PressDescription*> owners{description};
    if (press.name == "adakv") {
        const auto base = press.options.find("base");
        owners.push_back(find(base != press.options.end() ? base->second : "knorm"));
    }
    const std::int64_t fit = fitBelowPrompt(tokens);
    for (const PressDescription* owner : owners) {
        for (const PressOption& option : owner != nullptr ? owner->options : std::vector<PressOption>{}) {
            if (!option.belowPrompt || press.options.count(option.name) != 0 || fit < 1 ||
                std::stoll(option.defaultValue) < tokens) {
                continue;
            }
            press.options[option.name] = std::to_string(fit);
            press.fitted[option.name] = option.defaultValue;
            notices.push_back(owner->name + " " + option.name + " " + std::to_string(fit) + " instead of " +
                              option.defaultValue + ": the prompt has " + std::to_string(tokens) + " tokens");
        }
    }
    return notices;
}

std::string PressDescriptions::promptTooShort(const std::string& press, const std::string& option,
                                              std::int64_t value, std::int64_t tokens) {
    const std::string prompt = std::to_string(tokens) + (tokens == 1 ? " token" : " tokens");
    const std::int64_t fit = fitBelowPrompt(tokens);
    const std::string fix =
        fit >= 1 ? "give a longer prompt or --press-option " + option + "=" + std::to_string(fit)
                 : "give a prompt of at least " + std::to_string(value + 1) + " tokens";
    return press + "'s " + option + " (" + std::to_string(value) + ") must be shorter than the prompt (" +
           prompt + "): " + fix;
}

} // namespace kvscope::config
