// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/tokenizer/TokenizerError.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace kvscope::tokenizer {

/// Reading tokenizer.json components with refusals that name the component, the offending value
/// and what is allowed: a file kvscope cannot honour exactly must fail to load, never encode wrongly.
class ComponentJson {
public:
    /// The "type" of a component object; refuses a non-object or a missing type.
    static std::string type(const nlohmann::json& json, std::string_view component) {
        if (!json.is_object()) {
            throw TokenizerError(std::string(component) + ": expected a JSON object, got " + json.type_name());
        }
        const auto it = json.find("type");
        if (it == json.end() || !it->is_string()) {
            throw TokenizerError(std::string(component) + ": missing \"type\"");
        }
        return it->get<std::string>();
    }

    [[noreturn]] static void refuse(std::string_view component, std::string_view what, std::string_view value,
                                    std::string_view allowed) {
        throw TokenizerError(std::string(component) + ": unsupported " + std::string(what) + " '" +
                             std::string(value) + "' (supported: " + std::string(allowed) + ")");
    }

    static std::string string(const nlohmann::json& json, const char* key, std::string_view component,
                              std::string fallback = {}) {
        const auto it = json.find(key);
        if (it == json.end() || it->is_null()) {
            return fallback;
        }
        if (!it->is_string()) {
            throw TokenizerError(std::string(component) + ": \"" + key + "\" must be a string");
        }
        return it->get<std::string>();
    }

    /// A non-negative integer (JSON written by hand may carry it as a signed number).
    static bool isIndex(const nlohmann::json& json) {
        return json.is_number_unsigned() || (json.is_number_integer() && json.get<std::int64_t>() >= 0);
    }

    static bool boolean(const nlohmann::json& json, const char* key, std::string_view component, bool fallback) {
        const auto it = json.find(key);
        if (it == json.end() || it->is_null()) {
            return fallback;
        }
        if (!it->is_boolean()) {
            throw TokenizerError(std::string(component) + ": \"" + key + "\" must be true or false");
        }
        return it->get<bool>();
    }

    static const nlohmann::json& array(const nlohmann::json& json, const char* key, std::string_view component) {
        const auto it = json.find(key);
        if (it == json.end() || !it->is_array()) {
            throw TokenizerError(std::string(component) + ": \"" + key + "\" must be an array");
        }
        return *it;
    }

    /// A {"String": s} or {"Regex": r} pattern; isRegex tells which.
    static std::string pattern(const nlohmann::json& json, std::string_view component, bool& isRegex) {
        const auto it = json.find("pattern");
        if (it == json.end() || !it->is_object()) {
            throw TokenizerError(std::string(component) + ": \"pattern\" must be {\"String\": ...} or {\"Regex\": ...}");
        }
        if (const auto s = it->find("String"); s != it->end() && s->is_string()) {
            isRegex = false;
            return s->get<std::string>();
        }
        if (const auto r = it->find("Regex"); r != it->end() && r->is_string()) {
            isRegex = true;
            return r->get<std::string>();
        }
        refuse(component, "pattern", it->dump(), "String, Regex");
    }
};

} // namespace kvscope::tokenizer
