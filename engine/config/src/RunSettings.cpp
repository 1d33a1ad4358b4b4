// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/config/RunSettings.h"

#include "kvscope/config/ConfigError.h"
#include "kvscope/config/PressDescriptions.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <stdexcept>
#include <thread>

namespace kvscope::config {
namespace {

void requireAtLeast(std::int64_t value, std::int64_t minimum, const char* setting) {
    if (value < minimum) {
        throw ConfigError(std::string(setting) + " must be at least " + std::to_string(minimum) + ", got " +
                          std::to_string(value));
    }
}

std::string joined(const std::vector<int>& values) {
    std::string text;
    for (int value : values) {
        text += (text.empty() ? "" : ", ") + std::to_string(value);
    }
    return text;
}

void validatePress(const RunSettings& settings) {
    const PressSettings& press = settings.press;
    if (press.name.empty()) {
        if (press.ratio != 0.0 || !press.options.empty()) {
            throw ConfigError("a press ratio or press options need a press (allowed: " +
                              PressDescriptions::allowedNames() + ")");
        }
        return;
    }
    if (PressDescriptions::find(press.name) == nullptr) {
        throw ConfigError("unknown press `" + press.name + "` (allowed: " + PressDescriptions::allowedNames() + ")");
    }
    if (!(press.ratio >= 0.0 && press.ratio < 1.0)) {
        throw ConfigError("press ratio must be in [0, 1), got " + std::to_string(press.ratio));
    }
    try {
        PressDescriptions::checkOptions(press.name, press.options);
    } catch (const std::invalid_argument& error) {
        throw ConfigError(error.what());
    }
}

} // namespace

nlohmann::json PressSettings::toJson() const {
    nlohmann::json json = {{"name", name}, {"ratio", ratio}, {"options", options}};
    if (!fitted.empty()) {
        json["fitted"] = fitted;
    }
    return json;
}

std::optional<PressSettings> PressSettings::fromCacheSettings(const std::string& cacheSettingsJson) {
    const nlohmann::json settings = nlohmann::json::parse(cacheSettingsJson, nullptr, /*allow_exceptions=*/false);
    if (!settings.is_object() || !settings.contains("press") || !settings["press"].is_object()) {
        return std::nullopt;
    }
    const nlohmann::json& entry = settings["press"];
    PressSettings press;
    if (!entry.contains("name") || !entry["name"].is_string()) {
        return std::nullopt;
    }
    press.name = entry["name"].get<std::string>();
    if (entry.contains("ratio") && entry["ratio"].is_number()) {
        press.ratio = entry["ratio"].get<double>();
    }
    for (auto [field, target] : {std::pair{"options", &press.options}, std::pair{"fitted", &press.fitted}}) {
        if (entry.contains(field) && entry[field].is_object()) {
            for (const auto& [key, value] : entry[field].items()) {
                if (value.is_string()) {
                    (*target)[key] = value.get<std::string>();
                }
            }
        }
    }
    return press;
}

RunSettings liveSessionSettings() {
    RunSettings settings;
    settings.temperature = 0.8;
    settings.topK = 40;
    return settings;
}

int computeThreads(const RunSettings& settings) {
    if (settings.threads > 0) {
        return static_cast<int>(std::min<std::int64_t>(settings.threads, 1024));
    }
    // hardware_concurrency() may say 0 when it cannot tell: one thread then.
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

void validate(const RunSettings& settings) {
    const int sources = !settings.preset.empty() + !settings.configPath.empty() + !settings.checkpointDir.empty() +
                        !settings.modelFile.empty();
    if (sources > 1) {
        throw ConfigError("give one model source: a preset, a config.json, a checkpoint folder or a GGUF model file");
    }
    if (!settings.tokenizerPath.empty() && !settings.modelFile.empty()) {
        throw ConfigError("a tokenizer pairs with a preset or a config.json; a GGUF model file brings its own "
                          "(its tokenizer.ggml metadata)");
    }
    if (!settings.tokenizerPath.empty() && !settings.checkpointDir.empty()) {
        throw ConfigError("a tokenizer pairs with a preset or a config.json; a checkpoint folder brings its own "
                          "(its tokenizer.json or tokenizer.model)");
    }
    if (settings.attach) {
        if (sources > 0 || settings.serving) {
            throw ConfigError("attaching follows a running server: give no model source or workload with it (the "
                              "server runs the model; --tokenizer gives its blocks' text)");
        }
        if (settings.attach->endpoint.empty()) {
            throw ConfigError("attaching needs the server's KV event endpoint, e.g. tcp://127.0.0.1:5557 (vLLM's "
                              "--kv-events-config endpoint)");
        }
    }
    requireAtLeast(settings.tokens, 1, "tokens");
    requireAtLeast(settings.beams, 1, "beams");
    requireAtLeast(settings.promptLookupNumTokens, 0, "prompt-lookup-num-tokens");
    requireAtLeast(settings.numAssistantTokens, 1, "num-assistant-tokens");
    if (!settings.assistantModel.empty() && settings.promptLookupNumTokens > 0) {
        throw ConfigError("give one source of drafts: --assistant-model or --prompt-lookup-num-tokens, "
                                    "not both");
    }
    requireAtLeast(settings.topK, 0, "top-k");
    requireAtLeast(settings.threads, 0, "threads");
    if (!(settings.temperature >= 0.0)) {
        throw ConfigError("temperature must be at least 0 (0 = greedy), got " + std::to_string(settings.temperature));
    }
    validatePress(settings);
    const CacheSettings& cache = settings.cache;
    requireAtLeast(cache.groupSize, 0, "group size");
    requireAtLeast(cache.residualLength, 1, "residual length");
    requireAtLeast(cache.maxCacheLen, 0, "max cache length");
    for (const auto& [type, flag] : {std::pair{&cache.typeK, "cache-type-k"}, std::pair{&cache.typeV, "cache-type-v"}}) {
        const auto& types = llamaCppCacheTypes();
        if (std::find(types.begin(), types.end(), *type) == types.end()) {
            throw ConfigError("--" + std::string(flag) + " `" + *type + "` is not a type llama.cpp's cache takes (allowed: " +
                              allowedLlamaCppCacheTypes() + ")");
        }
    }
    if (cache.kind == CacheKind::Quantized) {
        const std::vector<int> widths = allowedBitWidths(cache.backend);
        if (std::find(widths.begin(), widths.end(), cache.nbits) == widths.end()) {
            throw ConfigError("nbits " + std::to_string(cache.nbits) + " is not supported by the " +
                              std::string(toString(cache.backend)) + " quantizer (allowed: " + joined(widths) + ")");
        }
    }
}

} // namespace kvscope::config
