// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/tokenizer/TokenizerConfig.h"

#include "kvscope/tokenizer/TokenizerError.h"

#include <nlohmann/json.hpp>

namespace kvscope::tokenizer {

namespace {

// A special token is written as a string or as a serialized AddedToken {"content": ...}.
std::optional<std::string> tokenField(const nlohmann::json& json, const char* key) {
    const auto it = json.find(key);
    if (it == json.end() || it->is_null()) {
        return std::nullopt;
    }
    if (it->is_string()) {
        return it->get<std::string>();
    }
    if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
        return (*it)["content"].get<std::string>();
    }
    throw TokenizerError(std::string("tokenizer_config.json: \"") + key + "\" must be a string or {\"content\": ...}");
}

std::optional<bool> flag(const nlohmann::json& json, const char* key) {
    const auto it = json.find(key);
    if (it == json.end() || it->is_null()) {
        return std::nullopt;
    }
    if (!it->is_boolean()) {
        throw TokenizerError(std::string("tokenizer_config.json: \"") + key + "\" must be true or false");
    }
    return it->get<bool>();
}

} // namespace

TokenizerConfig TokenizerConfig::fromJson(std::string_view text) {
    TokenizerConfig config;
    if (text.empty()) {
        return config;
    }
    nlohmann::json json;
    try {
        json = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& error) {
        throw TokenizerError(std::string("tokenizer_config.json: bad JSON: ") + error.what());
    }
    if (!json.is_object()) {
        throw TokenizerError("tokenizer_config.json: expected a JSON object");
    }
    config.bosToken = tokenField(json, "bos_token");
    config.eosToken = tokenField(json, "eos_token");
    config.unkToken = tokenField(json, "unk_token");
    config.padToken = tokenField(json, "pad_token");
    config.addBosToken = flag(json, "add_bos_token");
    config.addEosToken = flag(json, "add_eos_token");
    config.cleanUpTokenizationSpaces = flag(json, "clean_up_tokenization_spaces").value_or(true);
    if (const auto it = json.find("tokenizer_class"); it != json.end() && it->is_string()) {
        config.tokenizerClass = it->get<std::string>();
    }
    if (const auto it = json.find("additional_special_tokens"); it != json.end() && it->is_array()) {
        for (const auto& item : *it) {
            if (item.is_string()) {
                config.additionalSpecialTokens.push_back(item.get<std::string>());
            } else if (item.is_object() && item.contains("content") && item["content"].is_string()) {
                config.additionalSpecialTokens.push_back(item["content"].get<std::string>());
            }
        }
    }
    return config;
}

} // namespace kvscope::tokenizer
